"""TEST DOUBLE: npu_bridge.estimator."""
