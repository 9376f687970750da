"""TEST DOUBLE: npu_bridge.hccl."""
