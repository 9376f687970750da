"""TEST DOUBLE: collective ops of one process (rank 0 of 1): every op gives its input back."""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from msft_tf_standin import record


def allreduce(
    tensor: Any,
    reduction: str,
    fusion: int = 1,
    fusion_id: int = -1,
    group: str = "hccl_world_group",
) -> Any:
    if reduction not in ("sum", "prod", "max", "min"):
        raise ValueError(f"reduction must be sum, prod, max or min, got {reduction!r}")
    record("hccl_ops.allreduce", reduction=reduction)
    return tf.identity(tensor)


def broadcast(
    tensor: Any,
    root_rank: int,
    fusion: int = 2,
    fusion_id: int = 0,
    group: str = "hccl_world_group",
) -> Any:
    record("hccl_ops.broadcast", root_rank=root_rank)
    return [tf.identity(t) for t in tensor]


def allgather(
    tensor: Any,
    rank_size: int,
    group: str = "hccl_world_group",
    fusion: int = 0,
    fusion_id: int = -1,
) -> Any:
    if rank_size != 1:
        raise ValueError("TEST DOUBLE: one process only (rank_size 1)")
    record("hccl_ops.allgather")
    return tf.identity(tensor)
