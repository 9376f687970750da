"""TEST DOUBLE: the session-config helpers of npu_init (npu_config_proto, npu_run_config_init)."""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from msft_tf_standin import record
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

ConfigProto = tf.compat.v1.ConfigProto
_OFF = tf.compat.v1.OptimizerOptions.OFF


def npu_config_proto(config_proto: Any = None) -> Any:
    """The config with the NpuOptimizer custom optimizer added (the user's settings kept)."""
    if not isinstance(config_proto, ConfigProto):
        config_proto = ConfigProto()
    rewrite = config_proto.graph_options.rewrite_options
    if not any(c.name == "NpuOptimizer" for c in rewrite.custom_optimizers):
        rewrite.custom_optimizers.add().name = "NpuOptimizer"
        rewrite.memory_optimization = RewriterConfig.OFF
    config_proto.allow_soft_placement = True
    config_proto.log_device_placement = False
    rewrite.remapping = RewriterConfig.OFF
    config_proto.graph_options.optimizer_options.global_jit_level = _OFF
    record("npu_config_proto")
    return config_proto


def npu_run_config_init(run_config: Any = None) -> Any:
    if not isinstance(run_config, tf.estimator.RunConfig):
        run_config = tf.estimator.RunConfig()
    run_config.__dict__["_session_config"] = npu_config_proto(run_config.session_config)
    record("npu_run_config_init")
    return run_config


def set_parameter(custom_op: Any, name: str, value: Any) -> None:
    """One parameter_map entry, typed as the adapter writes it (objects are left out)."""
    attr = custom_op.parameter_map[name]
    if isinstance(value, bool):
        attr.b = value
    elif isinstance(value, int):
        attr.i = value
    elif isinstance(value, float):
        attr.f = value
    elif isinstance(value, str):
        attr.s = value.encode()
    else:
        del custom_op.parameter_map[name]
