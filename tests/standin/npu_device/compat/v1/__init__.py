"""TEST DOUBLE of ``npu_device.compat.v1`` (the TF 2.x adapter's TF 1.x names)."""
