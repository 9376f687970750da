"""unsupported.*: what is left for the NPU, one open-work row per API (rows of
unsupported_op.xlsx / .csv by category)."""
