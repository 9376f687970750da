"""TEST DOUBLE: NpuLossScaleOptimizer is Keras' LossScaleOptimizer (the adapter's subclasses it and
reads the NPU overflow status; on the CPU the Keras checks of finite gradients are the same)."""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from msft_tf_standin import record


class NpuLossScaleOptimizer:
    """Constructing one gives a tf.keras.mixed_precision.LossScaleOptimizer."""

    def __new__(
        cls,
        inner_optimizer: Any,
        dynamic: bool = True,
        initial_scale: Any = None,
        dynamic_growth_steps: Any = None,
    ) -> Any:
        record(
            "npu_device.train.optimizer.NpuLossScaleOptimizer",
            optimizer=type(inner_optimizer).__name__,
        )
        kwargs = {"dynamic": dynamic}
        if initial_scale is not None:
            kwargs["initial_scale"] = initial_scale
        if dynamic_growth_steps is not None:
            kwargs["dynamic_growth_steps"] = dynamic_growth_steps
        return tf.keras.mixed_precision.LossScaleOptimizer(inner_optimizer, **kwargs)
