"""TEST DOUBLE: NpuLossScaleOptimizer is Keras' LossScaleOptimizer (the adapter's subclasses it and
reads the NPU overflow status; on the CPU the Keras checks of finite gradients are the same).

It refuses what the adapter's refuses: the adapter's class (npu_device/train/optimizer/
npu_loss_scale_optimizer.py in Ascend/tensorflow's tf_adapter_2.x) passes its arguments to the
TF 2.x Keras ``LossScaleOptimizer.__init__(inner_optimizer, dynamic, initial_scale,
dynamic_growth_steps)``, which raises TypeError for a ``dynamic`` that is not a bool (the TF
2.0-2.3 experimental class's ``"dynamic"`` string, say) and for an inner optimizer that is not a
Keras optimizer. Checked here, whatever Keras the tests run on."""

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
        if not isinstance(dynamic, bool):
            raise TypeError(
                '"dynamic" argument to LossScaleOptimizer.__init__ must be a bool, but got: '
                f"{dynamic!r} (TEST DOUBLE)"
            )
        if not isinstance(inner_optimizer, _keras_optimizers()):
            raise TypeError(
                "LossScaleOptimizer's inner_optimizer must be a tf.keras.optimizers.Optimizer, "
                f"but got: {inner_optimizer!r} (TEST DOUBLE)"
            )
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


def _keras_optimizers() -> tuple[type, ...]:
    """Keras's optimizer classes: the current one and, where Keras has it, the legacy one."""
    legacy = getattr(getattr(tf.keras.optimizers, "legacy", None), "Optimizer", None)
    return (tf.keras.optimizers.Optimizer, *([legacy] if isinstance(legacy, type) else []))
