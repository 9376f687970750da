"""amp.*: automatic mixed precision (autocast, GradScaler) onto torch.npu.amp / device "npu"."""
