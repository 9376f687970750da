"""TEST DOUBLE: NPURunConfig and its option objects. Every keyword given is checked against the
adapter option table (msft_tf_standin.check_option): an unknown option or a bad value raises
ValueError naming it. NPURunConfig is a real tf.estimator.RunConfig; the NPU-only options are kept
in ``npu_options`` for NPUEstimator to put in the session config, as the adapter does. As the
adapter's (tf_adapter/python/npu_bridge/estimator/npu/npu_config.py), save_checkpoints_steps and
save_checkpoints_secs both None (their defaults) mean a checkpoint every 100 steps, where
tf.estimator.RunConfig saves none; ``.replace(...)`` (RunConfig's) sets them afterwards."""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from msft_tf_standin import check_option, check_requirements, record, table


def checked_options(place: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The options given to the constructor ``place`` by name (positional ones in the adapter's
    parameter order, from the table), each checked, and the options they need."""
    names = table().constructors[place]
    if len(args) > len(names):
        raise TypeError(f"{place} takes at most {len(names)} positional arguments")
    given = dict(zip(names, args))
    for name, value in kwargs.items():
        if name in given:
            raise TypeError(f"{place} got multiple values for {name!r}")
        given[name] = value
    for name, value in given.items():
        check_option(name, value, place)
        if name not in names:
            raise TypeError(f"{place} got an unexpected keyword argument {name!r}")
    check_requirements(given, place)
    record(place, options=sorted(given))
    return given


class _OptionObject:
    PLACE = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.options = checked_options(self.PLACE, args, kwargs)
        for name in table().constructors[self.PLACE]:
            setattr(self, "_" + name, self.options.get(name))


class ProfilingConfig(_OptionObject):
    PLACE = "ProfilingConfig"


class MemoryConfig(_OptionObject):
    PLACE = "MemoryConfig"


class DumpConfig(_OptionObject):
    PLACE = "DumpConfig"


class ExperimentalConfig(_OptionObject):
    PLACE = "ExperimentalConfig"


class DynamicInputConfig:
    def __init__(self, input_shape: Any, dynamic_dims: Any, dynamic_node_type: Any) -> None:
        if dynamic_node_type not in (0, 1):
            raise ValueError("dynamic_node_type must be 0 (dataset) or 1 (placeholder)")
        self._input_shape = input_shape
        self._dynamic_dims = dynamic_dims
        self._dynamic_node_type = dynamic_node_type


_OBJECT_OPTIONS = {
    "profiling_config": ProfilingConfig,
    "dump_config": DumpConfig,
    "memory_config": MemoryConfig,
    "experimental_config": ExperimentalConfig,
    "dynamic_input_config": DynamicInputConfig,
}


class NPURunConfig(tf.estimator.RunConfig):
    """A RunConfig whose NPU options were checked; they are in ``npu_options``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        given = checked_options("NPURunConfig", args, kwargs)
        for name, cls in _OBJECT_OPTIONS.items():
            if given.get(name) is not None and not isinstance(given[name], cls):
                raise ValueError(f"NPURunConfig {name} must be a {cls.__name__}")
        if "distribute" in given:
            given.setdefault("train_distribute", given.pop("distribute"))
        run_keys = table().constructors["RunConfig"]
        run_kwargs = {k: given[k] for k in run_keys if k in given}
        run_kwargs.setdefault("save_summary_steps", 0)  # NPURunConfig's default
        steps, secs = "save_checkpoints_steps", "save_checkpoints_secs"
        if run_kwargs.get(steps) is None and run_kwargs.get(secs) is None:
            run_kwargs[steps] = 100  # as the adapter's: both None means every 100 steps
        self.npu_options = {k: v for k, v in given.items() if k not in run_keys}
        super().__init__(**run_kwargs)
