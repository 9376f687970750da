"""operator_support.*: what the target torch_npu version's API-support list says of the code."""
