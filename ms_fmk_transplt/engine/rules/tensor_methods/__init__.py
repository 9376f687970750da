"""tensor_methods.*: .cuda() / .is_cuda and the other tensor and module methods onto .npu()."""
