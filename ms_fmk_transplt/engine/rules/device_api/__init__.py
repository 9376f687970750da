"""device_api.*: the torch.cuda namespace onto torch.npu (the interface table), capability
probes, and torch.cuda names the target's torch.npu lacks."""
