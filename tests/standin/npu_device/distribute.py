"""TEST DOUBLE: npu_device.distribute for one process (rank 0 of 1)."""

from __future__ import annotations

from typing import Any

from msft_tf_standin import record


def npu_distributed_keras_optimizer_wrapper(
    optimizer: Any,
    reduce_reduction: str = "mean",
    fusion: int = 1,
    fusion_id: int = -1,
    group: str = "hccl_world_group",
) -> Any:
    record("npu_device.distribute.npu_distributed_keras_optimizer_wrapper")
    return optimizer


def broadcast(
    values: Any,
    root_rank: int = 0,
    fusion: int = 2,
    fusion_id: int = 0,
    group: str = "hccl_world_group",
) -> None:
    record("npu_device.distribute.broadcast", root_rank=root_rank)


def all_reduce(
    values: Any,
    reduction: str = "mean",
    fusion: int = 1,
    fusion_id: int = -1,
    group: str = "hccl_world_group",
) -> Any:
    record("npu_device.distribute.all_reduce", reduction=reduction)
    return values


def shard_and_rebatch_dataset(dataset: Any, global_bs: int) -> tuple[Any, int]:
    record("npu_device.distribute.shard_and_rebatch_dataset")
    return dataset, global_bs
