"""TEST DOUBLE: npu_bridge.estimator.npu."""
