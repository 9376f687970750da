"""TEST DOUBLE: NPUStrategy, a one-device strategy on the CPU."""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from msft_tf_standin import record


class NPUStrategy(tf.compat.v1.distribute.OneDeviceStrategy):
    def __init__(self, device: Any = "/cpu:0") -> None:
        record("NPUStrategy")
        super().__init__("/cpu:0")
