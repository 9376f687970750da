"""advice.*: optional NPU performance and precision work the target version suggests for the
code (rows of advice.csv; data: rules/advice.json)."""
