"""profiler.*: the CUDA profiler switches (use_cuda=, ProfilerActivity.CUDA) onto the NPU's."""
