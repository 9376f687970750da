"""TEST DOUBLE of the Ascend TF 2.x adapter's npu_device (tests only, never shipped).

``npu_device.open().as_default()`` records that the device was opened (nothing moves: TensorFlow
runs on the CPU); ``global_options()`` is an options object whose every attribute set is checked
against the adapter option table (place "npu_device"; a nested one such as
``global_options().dump_config.enable_dump`` by its own name), and ``open()`` checks that the
options an option needs are set too. Importing it also records the first Keras layer built, so a
test can tell whether the device was opened before the model was made.
"""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf
from msft_tf_standin import check_option, check_requirements, record

from npu_device import distribute, ops, train

__all__ = ["open", "global_options", "distribute", "ops", "train", "NpuDeviceHandle"]

_NESTED = ("dump_config", "profiling_config", "memory_config", "experimental", "aoe_config")


class _Options:
    """Options set as attributes; each set is checked (``prefix`` names a nested group)."""

    def __init__(self, prefix: str = "") -> None:
        object.__setattr__(self, "_prefix", prefix)
        object.__setattr__(self, "_values", {})
        if not prefix:
            for name in _NESTED:
                object.__setattr__(self, name, _Options(name + "."))

    def __setattr__(self, key: str, value: Any) -> None:
        if not self._prefix and key in _NESTED:
            raise ValueError(f"global_options().{key} is a group of options, not an option")
        check_option(key, value, "npu_device")
        record("npu_device.option", name=self._prefix + key, value=value)
        self._values[key] = value

    def __getattr__(self, key: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if key in values:
            return values[key]
        raise AttributeError(key)

    def as_dict(self) -> dict[str, Any]:
        options = {self._prefix + k: v for k, v in self._values.items()}
        if not self._prefix:
            for name in _NESTED:
                options.update(getattr(self, name).as_dict())
        return options


_GLOBAL: list[_Options] = []
_DEVICES: dict[int, NpuDeviceHandle] = {}


def global_options() -> Any:
    if not _GLOBAL:
        _GLOBAL.append(_Options())
    return _GLOBAL[0]


class NpuDeviceHandle:
    def __init__(self, device_id: int) -> None:
        self.device_id = device_id

    @property
    def name(self) -> str:
        return f"/job:localhost/replica:0/task:0/device:NPU:{self.device_id}"

    def as_default(self) -> NpuDeviceHandle:
        record("npu_device.as_default", device_id=self.device_id)
        return self

    def scope(self) -> Any:
        return tf.device("/cpu:0")


def open(device_id: Any = None) -> NpuDeviceHandle:  # noqa: A001 - the adapter's name
    if device_id is None:
        device_id = int(os.getenv("ASCEND_DEVICE_ID", "0"))
    if device_id in _DEVICES:
        return _DEVICES[device_id]
    if _DEVICES:
        raise RuntimeError(
            f"Failed create npu instance on device {device_id} as existed "
            f"instance on {list(_DEVICES)}"
        )
    options = global_options().as_dict()
    check_requirements({k.rsplit(".", 1)[-1]: v for k, v in options.items()}, "npu_device")
    record("npu_device.open", device_id=device_id, options=sorted(options))
    _DEVICES[device_id] = NpuDeviceHandle(device_id)
    return _DEVICES[device_id]


def _record_first_layer() -> None:
    layer_cls = tf.keras.layers.Layer
    original = layer_cls.__init__
    seen: list[bool] = []

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        if not seen:
            seen.append(True)
            record("keras.first_layer", layer=type(self).__name__)
        original(self, *args, **kwargs)

    layer_cls.__init__ = init


_record_first_layer()
