"""TEST DOUBLE: npu_device.train."""

from npu_device.train import optimizer

__all__ = ["optimizer"]
