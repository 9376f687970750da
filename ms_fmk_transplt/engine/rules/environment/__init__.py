"""environment.*: CUDA/NCCL environment variables with an exact Ascend counterpart."""
