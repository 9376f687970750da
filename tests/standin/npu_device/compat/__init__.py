"""TEST DOUBLE of the TF 2.x adapter's ``npu_device.compat``: ``enable_v1()`` records the call
and turns on TensorFlow's 1.x behaviour (graph code in sessions), as the adapter's compat mode
does before TF 1.x-style code runs."""

from __future__ import annotations

import tensorflow as tf
from msft_tf_standin import record


def enable_v1() -> None:
    record("npu_device.compat.enable_v1")
    tf.compat.v1.disable_v2_behavior()
