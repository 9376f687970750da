"""TEST DOUBLE: NPUEstimator and NPUEstimatorSpec.

NPUEstimator accepts only an NPURunConfig (as the adapter does) and gives TensorFlow a session
config carrying the NpuOptimizer entry with the config's NPU options in its parameter_map; the
session gate then checks them and removes the entry. NPUEstimatorSpec is an EstimatorSpec that
also takes ``host_call``.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from msft_tf_standin import record

from npu_bridge.estimator.npu.npu_config import NPURunConfig
from npu_bridge.estimator.npu.session_config import npu_config_proto, set_parameter


class NPUEstimatorSpec(tf.estimator.EstimatorSpec):
    def __new__(
        cls,
        mode: Any,
        predictions: Any = None,
        loss: Any = None,
        train_op: Any = None,
        eval_metric_ops: Any = None,
        export_outputs: Any = None,
        training_chief_hooks: Any = None,
        training_hooks: Any = None,
        scaffold: Any = None,
        evaluation_hooks: Any = None,
        prediction_hooks: Any = None,
        host_call: Any = None,
    ) -> Any:
        if host_call is not None and not isinstance(host_call, (tuple, list)):
            raise ValueError("host_call must be a tuple (fn, tensors)")
        record("NPUEstimatorSpec", mode=mode)
        spec = super().__new__(
            cls, mode=mode, predictions=predictions, loss=loss, train_op=train_op,
            eval_metric_ops=eval_metric_ops, export_outputs=export_outputs,
            training_chief_hooks=training_chief_hooks, training_hooks=training_hooks,
            scaffold=scaffold, evaluation_hooks=evaluation_hooks,
            prediction_hooks=prediction_hooks,
        )  # fmt: skip
        spec._host_call = host_call
        return spec


class NPUEstimator(tf.estimator.Estimator):
    def __init__(
        self,
        model_fn: Any = None,
        model_dir: Any = None,
        config: Any = None,
        params: Any = None,
        job_start_file: str = "",
        warm_start_from: Any = None,
    ) -> None:
        if config is None or not isinstance(config, NPURunConfig):
            raise ValueError("`config` must be provided with type `NPURunConfig` (TEST DOUBLE)")
        session_config = npu_config_proto(config.session_config)
        custom = session_config.graph_options.rewrite_options.custom_optimizers
        npu = next(c for c in custom if c.name == "NpuOptimizer")
        for name, value in sorted(config.npu_options.items()):
            set_parameter(npu, name, value)
        config.__dict__["_session_config"] = session_config
        record("NPUEstimator", options=sorted(config.npu_options))
        super().__init__(
            model_fn=model_fn,
            model_dir=model_dir,
            config=config,
            params=params,
            warm_start_from=warm_start_from,
        )
