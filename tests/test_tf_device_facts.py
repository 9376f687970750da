"""TensorFlow facts the tf family's tips state, checked on the installed TensorFlow (CPU build,
no GPU: as on an NPU machine, where TensorFlow sees no GPU either). TensorFlow is imported in
subprocesses only."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest
from required_tools import need_tool

need_tool(
    "tensorflow", importlib.util.find_spec("tensorflow"), "tensorflow is not installed", module=True
)

pytestmark = pytest.mark.execution


def run_tf(code: str) -> str:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=env
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[-1]


def test_one_device_strategy_on_a_missing_gpu_builds_on_the_cpu() -> None:
    """gpu_probes.ONE_DEVICE: the strategy's scope names a GPU the machine lacks; soft placement
    (TF 2.x's default) puts the model's variables on the CPU, not on the default device."""
    out = run_tf(
        "import tensorflow as tf\n"
        "assert not tf.config.list_physical_devices('GPU')\n"
        "with tf.distribute.OneDeviceStrategy('device:GPU:0').scope():\n"
        "    m = tf.keras.Sequential([tf.keras.layers.Dense(1)]); m.build((None, 3))\n"
        "print(tf.config.get_soft_device_placement(), {w.device for w in m.weights})\n"
    )
    assert out == "True {'/job:localhost/replica:0/task:0/device:CPU:0'}"


def test_disable_v2_behavior_breaks_eager_numpy() -> None:
    """adapter_import: npu_device.compat.enable_v1() calls disable_v2_behavior()
    (tf_adapter_2.x npu_device/npu_device.py): eager code after it (``.numpy()``) fails."""
    out = run_tf(
        "import tensorflow as tf\n"
        "tf.compat.v1.disable_v2_behavior()\n"
        "try:\n"
        "    tf.constant(1.0).numpy()\n"
        "    print('eager')\n"
        "except AttributeError:\n"
        "    print('graph')\n"
    )
    assert out == "graph"
