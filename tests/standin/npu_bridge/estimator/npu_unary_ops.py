"""TEST DOUBLE: npu_unary_ops.gelu is the tanh-approximated GELU of TensorFlow."""

from __future__ import annotations

import types
from typing import Any

import tensorflow as tf
from msft_tf_standin import record


def _gelu(x: Any, name: Any = None) -> Any:
    record("npu_unary_ops.gelu")
    return tf.nn.gelu(x, approximate=True, name=name)


npu_unary_ops = types.SimpleNamespace(gelu=_gelu)
