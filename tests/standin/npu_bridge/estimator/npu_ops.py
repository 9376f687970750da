"""TEST DOUBLE: npu_ops. dropout is tf.compat.v1.nn.dropout (same seeds, same mask on the CPU);
initialize_system / shutdown_system are no-op graph ops that leave a log entry when built."""

from __future__ import annotations

import numbers
from typing import Any

import tensorflow as tf
from msft_tf_standin import record


def dropout(
    x: Any, keep_prob: Any, noise_shape: Any = None, seed: Any = None, name: Any = None
) -> Any:
    if tf.executing_eagerly():
        raise RuntimeError("npu_ops.dropout() is not compatible with eager execution.")
    x = tf.convert_to_tensor(x, name="x")
    if not x.dtype.is_floating:
        raise ValueError(f"x must be a floating point tensor. Got a {x.dtype} tensor instead.")
    if isinstance(keep_prob, numbers.Real) and not 0 < keep_prob <= 1.0:
        raise ValueError(
            f"keep_prob must be a float value or a scalar tensor in (0, 1], got {keep_prob}"
        )
    record("npu_ops.dropout", keep_prob=keep_prob if isinstance(keep_prob, float) else None)
    if isinstance(keep_prob, float) and keep_prob == 1.0:
        return x
    return tf.compat.v1.nn.dropout(
        x, keep_prob=keep_prob, noise_shape=noise_shape, seed=seed, name=name
    )


def initialize_system(name: Any = None) -> Any:
    record("npu_ops.initialize_system")
    return tf.no_op(name=name or "NPUInit")


def shutdown_system(name: Any = None) -> Any:
    record("npu_ops.shutdown_system")
    return tf.no_op(name=name or "NPUShutdown")
