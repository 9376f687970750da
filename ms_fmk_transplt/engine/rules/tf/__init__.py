"""tf.*: TensorFlow scripts onto the Ascend TF adapter (npu_bridge / npu_device)."""
