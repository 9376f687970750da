"""TEST DOUBLE: the distributed optimizer wrappers. One process (rank 0 of 1): the gradients'
allreduce is the identity, so the wrapped optimizer's updates are unchanged."""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from msft_tf_standin import record


class NPUDistributedOptimizer(tf.compat.v1.train.Optimizer):
    def __init__(
        self, optimizer: Any, is_weight_update_sharding: bool = False, name: Any = None
    ) -> None:
        if not isinstance(optimizer, tf.compat.v1.train.Optimizer):
            raise TypeError("NPUDistributedOptimizer wraps a tf.compat.v1.train.Optimizer")
        super().__init__(use_locking=False, name=name or f"Distributed{type(optimizer).__name__}")
        self._optimizer = optimizer
        record("NPUDistributedOptimizer", optimizer=type(optimizer).__name__)

    def compute_gradients(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.compute_gradients(*args, **kwargs)

    def apply_gradients(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.apply_gradients(*args, **kwargs)

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.variables(*args, **kwargs)


def npu_distributed_optimizer_wrapper(optimizer: Any) -> Any:
    record("npu_distributed_optimizer_wrapper")
    return optimizer


def KerasDistributeOptimizer(optimizer: Any, name: str = "NpuKerasOptimizer", **kwargs: Any) -> Any:  # noqa: N802
    record("KerasDistributeOptimizer", optimizer=type(optimizer).__name__)
    return optimizer
