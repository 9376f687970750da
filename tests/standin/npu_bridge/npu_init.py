"""TEST DOUBLE of npu_bridge.npu_init: ``from npu_bridge.npu_init import *`` as migrated TF 1.x
code writes it. Importing it installs the session gate (msft_tf_standin.install_session_gate):
from then on every tf.compat.v1 Session needs the NpuOptimizer entry in its config."""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf
from msft_tf_standin import install_session_gate, record
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

from npu_bridge.estimator import npu_ops
from npu_bridge.estimator.npu import npu_strategy, util
from npu_bridge.estimator.npu.npu_config import (
    DumpConfig,
    DynamicInputConfig,
    ExperimentalConfig,
    MemoryConfig,
    NPURunConfig,
    ProfilingConfig,
)
from npu_bridge.estimator.npu.npu_estimator import NPUEstimator, NPUEstimatorSpec
from npu_bridge.estimator.npu.npu_hook import NPUBroadcastGlobalVariablesHook
from npu_bridge.estimator.npu.npu_optimizer import (
    KerasDistributeOptimizer,
    NPUDistributedOptimizer,
    npu_distributed_optimizer_wrapper,
)
from npu_bridge.estimator.npu.session_config import npu_config_proto, npu_run_config_init
from npu_bridge.estimator.npu_unary_ops import npu_unary_ops
from npu_bridge.hccl import hccl_ops

__all__ = [
    "DumpConfig", "DynamicInputConfig", "ExperimentalConfig", "MemoryConfig", "NPURunConfig",
    "ProfilingConfig", "NPUEstimator", "NPUEstimatorSpec", "NPUBroadcastGlobalVariablesHook",
    "KerasDistributeOptimizer", "NPUDistributedOptimizer", "npu_distributed_optimizer_wrapper",
    "npu_config_proto", "npu_run_config_init", "npu_ops", "npu_unary_ops", "npu_strategy",
    "hccl_ops", "RewriterConfig", "npu_hooks_append", "init_resource", "shutdown_resource",
    "close_session", "get_npu_rank_id", "get_npu_local_rank_id", "get_npu_rank_size",
    "get_npu_local_rank_size", "get_rank_id", "get_rank_size", "get_local_rank_id",
    "get_local_rank_size", "npu_keras_optimizer", "npu_tf_optimizer", "tf",
]  # fmt: skip

install_session_gate()


def npu_hooks_append(hooks_list: Any = ()) -> list[Any]:
    if not isinstance(hooks_list, list):
        hooks_list = []
    hooks_list.append(NPUBroadcastGlobalVariablesHook(0, int(os.getenv("RANK_ID", "0"))))
    record("npu_hooks_append")
    return hooks_list


def get_rank_id(group: str = "hccl_world_group") -> int:
    record("get_rank_id")
    return int(os.getenv("RANK_ID", "0"))


def get_rank_size(group: str = "hccl_world_group") -> int:
    record("get_rank_size")
    return int(os.getenv("RANK_SIZE", "1"))


def get_local_rank_id(group: str = "hccl_world_group") -> int:
    record("get_local_rank_id")
    return int(os.getenv("RANK_ID", "0"))


def get_local_rank_size(group: str = "hccl_world_group") -> int:
    record("get_local_rank_size")
    return int(os.getenv("RANK_SIZE", "1"))


def init_resource(config: Any = None) -> tuple[Any, Any]:
    """A session (through the gate) that ran initialize_system, and the shutdown op."""
    record("init_resource")
    config = npu_config_proto(config)
    util.global_dict_init()
    npu_init, npu_shutdown = npu_ops.initialize_system(), npu_ops.shutdown_system()
    sess = tf.compat.v1.Session(config=config)
    sess.run(npu_init)
    for key, read in (
        ("npu_rank_id", get_rank_id), ("npu_local_rank_id", get_local_rank_id),
        ("npu_rank_size", get_rank_size), ("npu_local_rank_size", get_local_rank_size),
    ):  # fmt: skip
        util.set_value(key, read())
    return sess, npu_shutdown


def shutdown_resource(sess: Any, npu_shutdown: Any) -> None:
    record("shutdown_resource")
    sess.run(npu_shutdown)


def close_session(sess: Any) -> None:
    record("close_session")
    sess.close()


def get_npu_rank_id() -> int:
    record("get_npu_rank_id")
    return int(util.get_value("npu_rank_id", 0))


def get_npu_local_rank_id() -> int:
    record("get_npu_local_rank_id")
    return int(util.get_value("npu_local_rank_id", 0))


def get_npu_rank_size() -> int:
    record("get_npu_rank_size")
    return int(util.get_value("npu_rank_size", 1))


def get_npu_local_rank_size() -> int:
    record("get_npu_local_rank_size")
    return int(util.get_value("npu_local_rank_size", 1))


def npu_keras_optimizer(opt: Any) -> Any:
    return KerasDistributeOptimizer(opt)


def npu_tf_optimizer(opt: Any) -> Any:
    return NPUDistributedOptimizer(opt)
