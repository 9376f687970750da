"""TEST DOUBLE: NPUBroadcastGlobalVariablesHook (one process: nothing to broadcast)."""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from msft_tf_standin import record


class NPUBroadcastGlobalVariablesHook(tf.compat.v1.train.SessionRunHook):
    def __init__(self, root_rank: Any = None, index: Any = None) -> None:
        self._root_rank = root_rank
        self._index = index
        record("NPUBroadcastGlobalVariablesHook", root_rank=root_rank, index=index)

    def begin(self) -> None:
        record("NPUBroadcastGlobalVariablesHook.begin")
