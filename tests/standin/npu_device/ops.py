"""TEST DOUBLE: npu_device.ops.gelu is the tanh-approximated GELU of TensorFlow."""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from msft_tf_standin import record


def gelu(x: Any) -> Any:
    record("npu_device.ops.gelu")
    return tf.nn.gelu(x, approximate=True)
