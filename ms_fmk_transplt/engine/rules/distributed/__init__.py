"""distributed.*: nccl onto hccl (backends, init_process_group, collective enums)."""
