"""TensorFlow migrations proven by running them (pytest -m execution), under the CPU test double
of the Ascend TF adapter (tests/standin/npu_bridge, tests/standin/npu_device).

(a) the double itself: it validates the adapter options it receives against the option table and
    refuses sessions and estimators the migration left without the NPU configuration;
(b) each TF project fixture: the original on plain TensorFlow and the migrated script under the
    double print the same final loss (and the same counts: evaluation examples, loss scale, ...),
    and the double's log shows the NPU calls in order.

TensorFlow is imported only in the subprocesses (one per script; never in the pytest process).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from required_tools import need_tool

from ms_fmk_transplt.commands.cli import main

need_tool(
    "tensorflow", importlib.util.find_spec("tensorflow"), "tensorflow is not installed", module=True
)

pytestmark = pytest.mark.execution

ROOT = Path(__file__).resolve().parent.parent
PROJECTS = ROOT / "fixtures" / "projects"
STANDIN = ROOT / "tests" / "standin"
GOLDEN = ROOT / "fixtures" / "expected"  # the tool's migrated projects (test_projects.py)
FINAL = re.compile(r"^final loss ([0-9.eE+-]+)$", re.M)
SCRIPTS = {
    "tf_estimator": "train_estimator.py",
    "tf_estimator_eval": "train_eval.py",
    "tf_session": "train_session.py",
    "tf_keras": "train_keras.py",
    "tf_keras_amp": "train_amp.py",
}
# what a script prints besides its final loss, which the migrated run must print the same
REPORTED = re.compile(r"^(?:eval examples|predictions|prediction checkpoints|loss scale) .*$", re.M)


def tf_env(standin: bool, log: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MSFT_STANDIN_LOG")}
    env.update(TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="", PYTHONDONTWRITEBYTECODE="1")
    if standin:  # the double reads the option table through the package
        env["PYTHONPATH"] = os.pathsep.join([str(STANDIN), str(ROOT)])
    if log is not None:
        env["MSFT_STANDIN_LOG"] = str(log)
    return env


def run_python(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def final_loss(proc: subprocess.CompletedProcess) -> float:
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    match = FINAL.search(proc.stdout)
    assert match, (proc.stdout + proc.stderr)[-3000:]
    return float(match.group(1))


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# --- (a) the double -----------------------------------------------------------------------------

_PROBE = r"""
import json, sys, traceback
import tensorflow as tf
snippets = json.loads(sys.stdin.read())
out = {}
import msft_tf_standin
for name, code in snippets.items():
    # each check starts from fresh adapter modules (global options, opened device) and log
    for module in [m for m in sys.modules if m.split(".")[0] in ("npu_bridge", "npu_device")]:
        del sys.modules[module]
    msft_tf_standin.LOG.clear()
    scope = {}
    try:
        exec(code, scope)
        out[name] = ["ok", repr(scope.get("result"))]
    except Exception as exc:
        out[name] = [type(exc).__name__, str(exc)]
print("PROBE" + json.dumps(out))
"""

# name -> (code, expected outcome: exception type name or "ok", text the message/result holds)
CHECKS: dict[str, tuple[str, str, str]] = {
    "run_config_unknown_option": (
        "from npu_bridge.npu_init import *\nNPURunConfig(precision_mod='allow_mix_precision')",
        "ValueError",
        "precision_mod",
    ),
    "run_config_bad_value": (
        "from npu_bridge.npu_init import *\nNPURunConfig(precision_mode='fastest')",
        "ValueError",
        "precision_mode",
    ),
    "run_config_good": (
        "from npu_bridge.npu_init import *\n"
        "c = NPURunConfig(precision_mode='allow_mix_precision', iterations_per_loop=10,"
        " dump_config=DumpConfig(enable_dump=True, dump_path='/tmp', dump_mode='all'))\n"
        "result = sorted(c.npu_options)",
        "ok",
        "['dump_config', 'iterations_per_loop', 'precision_mode']",
    ),
    "dump_config_bad_value": (
        "from npu_bridge.npu_init import *\nDumpConfig(enable_dump=True, dump_mode='everything')",
        "ValueError",
        "dump_mode",
    ),
    "profiling_config_unknown_option": (
        "from npu_bridge.npu_init import *\nProfilingConfig(enable_profilling=True)",
        "ValueError",
        "enable_profilling",
    ),
    "experimental_config_bad_value": (
        "from npu_bridge.npu_init import *\n"
        "ExperimentalConfig(accelerate_train_mode='fast|step|2.5')",
        "ValueError",
        "accelerate_train_mode",
    ),
    "session_without_npu_optimizer": (
        "from npu_bridge.npu_init import *\n"
        "with tf.Graph().as_default():\n"
        "    tf.compat.v1.Session(config=tf.compat.v1.ConfigProto())",
        "RuntimeError",
        "NpuOptimizer",
    ),
    "interactive_session_without_config": (
        "from npu_bridge.npu_init import *\n"
        "with tf.Graph().as_default():\n"
        "    tf.compat.v1.InteractiveSession()",
        "RuntimeError",
        "NpuOptimizer",
    ),
    "session_with_npu_config_runs": (
        "from npu_bridge.npu_init import *\n"
        "with tf.Graph().as_default():\n"
        "    with tf.compat.v1.Session(config=npu_config_proto()) as s:\n"
        "        result = float(s.run(tf.constant(2.0) * 3.0))",
        "ok",
        "6.0",
    ),
    "session_bad_parameter_map_value": (
        "from npu_bridge.npu_init import *\n"
        "config = npu_config_proto()\n"
        "custom = config.graph_options.rewrite_options.custom_optimizers[0]\n"
        "custom.parameter_map['precision_mode'].s = b'fastest'\n"
        "with tf.Graph().as_default():\n"
        "    tf.compat.v1.Session(config=config)",
        "ValueError",
        "precision_mode",
    ),
    "estimator_plain_run_config": (
        "from npu_bridge.npu_init import *\n"
        "def model_fn(features, labels, mode): pass\n"
        "NPUEstimator(model_fn=model_fn, config=tf.estimator.RunConfig())",
        "ValueError",
        "NPURunConfig",
    ),
    "estimator_puts_options_in_session_config": (
        "from npu_bridge.npu_init import *\n"
        "import tempfile\n"
        "def model_fn(features, labels, mode): pass\n"
        "config = NPURunConfig(model_dir=tempfile.mkdtemp(), iterations_per_loop=1,"
        " precision_mode='allow_mix_precision')\n"
        "est = NPUEstimator(model_fn=model_fn, config=config)\n"
        "rewrite = est.config.session_config.graph_options.rewrite_options\n"
        "npu = [c for c in rewrite.custom_optimizers if c.name == 'NpuOptimizer'][0]\n"
        "params = npu.parameter_map\n"
        "result = (params['precision_mode'].s, params['iterations_per_loop'].i)",
        "ok",
        "(b'allow_mix_precision', 1)",
    ),
    "estimator_without_config": (
        "from npu_bridge.npu_init import *\n"
        "def model_fn(features, labels, mode): pass\n"
        "NPUEstimator(model_fn=model_fn)",
        "ValueError",
        "NPURunConfig",
    ),
    "run_config_checkpoints_every_100_steps": (
        "from npu_bridge.npu_init import *\n"
        "result = [(c.save_checkpoints_steps, c.save_checkpoints_secs) for c in"
        " (NPURunConfig(), NPURunConfig(save_checkpoints_steps=None),"
        " NPURunConfig(save_checkpoints_secs=60),"
        " tf.estimator.RunConfig(save_checkpoints_steps=None))]",
        "ok",
        "[(100, None), (100, None), (None, 60), (None, None)]",
    ),
    "run_config_replace_gives_run_config_checkpoints": (
        "from npu_bridge.npu_init import *\n"
        "pair = lambda c: (c.save_checkpoints_steps, c.save_checkpoints_secs)\n"
        "npu = [NPURunConfig().replace(save_checkpoints_steps=None, save_checkpoints_secs=600)]\n"
        "gpu = [tf.estimator.RunConfig()]\n"
        "for rank in (0, 1):\n"
        "    steps = 1000 if rank == 0 else None\n"
        "    npu.append(NPURunConfig(save_checkpoints_steps=steps)"
        ".replace(save_checkpoints_steps=1000 if rank == 0 else None,"
        " save_checkpoints_secs=None))\n"
        "    gpu.append(tf.estimator.RunConfig(save_checkpoints_steps=steps))\n"
        "result = ([pair(c) for c in npu], [pair(c) for c in npu] == [pair(c) for c in gpu])",
        "ok",
        "([(None, 600), (1000, None), (None, None)], True)",
    ),
    "estimator_takes_replaced_run_config": (
        "from npu_bridge.npu_init import *\n"
        "import tempfile\n"
        "def model_fn(features, labels, mode): pass\n"
        "config = NPURunConfig(model_dir=tempfile.mkdtemp(), save_checkpoints_steps=None,"
        " save_checkpoints_secs=None, precision_mode='allow_mix_precision')"
        ".replace(save_checkpoints_steps=None, save_checkpoints_secs=None)\n"
        "est = NPUEstimator(model_fn=model_fn, config=config)\n"
        "c = est.config\n"
        "result = (type(c).__name__, c.save_checkpoints_steps, c.save_checkpoints_secs,"
        " c.npu_options)",
        "ok",
        "('NPURunConfig', None, None, {'precision_mode': 'allow_mix_precision'})",
    ),
    "loss_scale_dynamic_string": (
        "import npu_device, tensorflow as tf\n"
        "npu_device.train.optimizer.NpuLossScaleOptimizer(tf.keras.optimizers.SGD(0.1), 'dynamic')",
        "TypeError",
        "must be a bool, but got: 'dynamic'",
    ),
    "loss_scale_dynamic_number": (
        "import npu_device, tensorflow as tf\n"
        "npu_device.train.optimizer.NpuLossScaleOptimizer(tf.keras.optimizers.SGD(0.1),"
        " dynamic=128)",
        "TypeError",
        "must be a bool, but got: 128",
    ),
    "loss_scale_graph_optimizer": (
        "import npu_device, tensorflow as tf\n"
        "npu_device.train.optimizer.NpuLossScaleOptimizer("
        "tf.compat.v1.train.GradientDescentOptimizer(0.1))",
        "TypeError",
        "inner_optimizer",
    ),
    "loss_scale_bool_forms": (
        "import npu_device, tensorflow as tf\n"
        "new = npu_device.train.optimizer.NpuLossScaleOptimizer\n"
        "fixed = new(tf.keras.optimizers.SGD(0.1), dynamic=False, initial_scale=64)\n"
        "dynamic = new(tf.keras.optimizers.SGD(0.1), True)\n"
        "result = (fixed.dynamic, float(fixed.loss_scale), dynamic.dynamic)",
        "ok",
        "(False, 64.0, True)",
    ),
    "npu_device_unknown_option": (
        "import npu_device\nnpu_device.global_options().precison_mode = 'allow_mix_precision'",
        "ValueError",
        "precison_mode",
    ),
    "npu_device_bad_value": (
        "import npu_device\nnpu_device.global_options().precision_mode = 'fastest'",
        "ValueError",
        "precision_mode",
    ),
    "npu_device_nested_bad_value": (
        "import npu_device\nnpu_device.global_options().dump_config.dump_mode = 'everything'",
        "ValueError",
        "dump_mode",
    ),
    "npu_device_good_options_reach_open": (
        "import npu_device\n"
        "npu_device.global_options().precision_mode = 'allow_mix_precision'\n"
        "npu_device.global_options().dump_config.enable_dump = True\n"
        "npu_device.global_options().dump_config.dump_path = '/tmp'\n"
        "npu_device.open().as_default()\n"
        "import msft_tf_standin\n"
        "result = [e['options'] for e in msft_tf_standin.LOG if e['event'] == 'npu_device.open']",
        "ok",
        "[['dump_config.dump_path', 'dump_config.enable_dump', 'precision_mode']]",
    ),
    "npu_device_requirement_missing": (
        "import npu_device\n"
        "npu_device.global_options().dump_config.enable_dump = True\n"
        "npu_device.open()",
        "ValueError",
        "dump_path",
    ),
    "dump_config_requirement_missing": (
        "from npu_bridge.npu_init import *\nDumpConfig(enable_dump=True)",
        "ValueError",
        "dump_path",
    ),
    "dropout_equals_tf_dropout": (
        "from npu_bridge.npu_init import *\n"
        "with tf.Graph().as_default():\n"
        "    tf.compat.v1.set_random_seed(7)\n"
        "    x = tf.ones([64, 64])\n"
        "    a = npu_ops.dropout(x, keep_prob=0.6, seed=5)\n"
        "    b = tf.compat.v1.nn.dropout(x, keep_prob=0.6, seed=5)\n"
        "    with tf.compat.v1.Session(config=npu_config_proto()) as s:\n"
        "        va, vb = s.run([a, b])\n"
        "result = bool((va == vb).all()) and 0 < (va == 0).mean() < 1",
        "ok",
        "True",
    ),
    "dropout_rate_as_keep_prob": (  # tf.npu_ops: rate=a + b -> keep_prob=1 - (a + b)
        "from npu_bridge.npu_init import *\n"
        "with tf.Graph().as_default():\n"
        "    tf.compat.v1.set_random_seed(7)\n"
        "    x, base, step = tf.ones([64, 64]), 0.25, 0.25\n"
        "    a = npu_ops.dropout(x, keep_prob=1 - (base + step), seed=5)\n"
        "    b = tf.compat.v1.nn.dropout(x, rate=base + step, seed=5)\n"
        "    with tf.compat.v1.Session(config=npu_config_proto()) as s:\n"
        "        va, vb = s.run([a, b])\n"
        "result = bool((va == vb).all()) and float(va.max())",
        "ok",
        "2.0",
    ),
    "tpu_estimator_without_tpu": (  # tf.tpu_estimator's form runs, batch size from params
        "from npu_bridge.npu_init import *\n"
        "import tempfile\n"
        "tpu, v1, seen = tf.compat.v1.estimator.tpu, tf.compat.v1, []\n"
        "def input_fn(params):\n"
        "    seen.append(params['batch_size'])\n"
        "    data = ({'x': tf.ones([64, 4])}, tf.zeros([64], tf.int32))\n"
        "    return tf.data.Dataset.from_tensor_slices(data).repeat().batch(\n"
        "        params['batch_size'], drop_remainder=True)\n"
        "def model_fn(features, labels, mode, params):\n"
        "    logits = v1.layers.dense(features['x'], 2)\n"
        "    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)\n"
        "    step = v1.train.get_global_step()\n"
        "    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, step)\n"
        "    return tpu.TPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op,\n"
        "                                scaffold_fn=lambda: v1.train.Scaffold())\n"
        "run_config = tpu.RunConfig(model_dir=tempfile.mkdtemp(),\n"
        "                           tpu_config=tpu.TPUConfig(iterations_per_loop=5))\n"
        "est = tpu.TPUEstimator(use_tpu=False, model_fn=model_fn, train_batch_size=16,\n"
        "                       config=npu_run_config_init(run_config=run_config),\n"
        "                       eval_on_tpu=False, export_to_tpu=False)\n"
        "est.train(input_fn=input_fn, max_steps=3)\n"
        "result = (seen, int(est.get_variable_value('global_step')))",
        "ok",
        "([16], 3)",
    ),
    "init_resource_then_rank": (
        "from npu_bridge.npu_init import *\n"
        "with tf.Graph().as_default():\n"
        "    sess, shutdown = init_resource()\n"
        "    rank, size = get_npu_rank_id(), get_npu_rank_size()\n"
        "    shutdown_resource(sess, shutdown)\n"
        "    close_session(sess)\n"
        "import msft_tf_standin\n"
        "events = [e['event'] for e in msft_tf_standin.LOG]\n"
        "result = (rank, size, events.index('init_resource') < events.index('get_npu_rank_id'),"
        " 'npu_ops.initialize_system' in events)",
        "ok",
        "(0, 1, True, True)",
    ),
}


@pytest.fixture(scope="module")
def probed(tmp_path_factory) -> dict[str, list[str]]:
    """Every check of CHECKS run in one subprocess (one TensorFlow import)."""
    cwd = tmp_path_factory.mktemp("probe")
    snippets = {name: code for name, (code, _, _) in CHECKS.items()}
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE],
        input=json.dumps(snippets),
        cwd=cwd,
        env=tf_env(standin=True),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.split("PROBE", 1)[1])


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_double_checks(probed: dict[str, list[str]], check: str) -> None:
    _, outcome, text = CHECKS[check]
    got_outcome, got_text = probed[check]
    assert got_outcome == outcome, got_text
    if outcome == "ok":
        assert got_text == text
    else:
        assert text in got_text


# --- (b) the projects -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tool_output(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("migrated")
    for name in SCRIPTS:
        result = CliRunner().invoke(main, ["-q", "-i", str(PROJECTS / name), "-o", str(out)])
        assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def original_runs(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """Each original on plain TensorFlow (no double on the path)."""
    cwd = tmp_path_factory.mktemp("original")
    return {
        name: run_python([str(PROJECTS / name / script)], cwd, tf_env(standin=False))
        for name, script in SCRIPTS.items()
    }


@pytest.fixture(scope="module")
def original_losses(original_runs: dict[str, subprocess.CompletedProcess]) -> dict[str, float]:
    return {name: final_loss(proc) for name, proc in original_runs.items()}


EXPECTED_EVENTS = {
    "tf_estimator": ["NPURunConfig", "NPUEstimator", "NPUEstimatorSpec", "session"],
    "tf_estimator_eval": ["NPURunConfig", "NPUEstimator", "NPUEstimatorSpec", "session"],
    "tf_session": ["npu_ops.dropout", "npu_config_proto", "session"],
    "tf_keras": [
        "npu_device.open",
        "npu_device.as_default",
        "keras.first_layer",
        "npu_device.train.optimizer.NpuLossScaleOptimizer",
    ],
    "tf_keras_amp": [
        "npu_device.open",
        "npu_device.as_default",
        "keras.first_layer",
        "npu_device.train.optimizer.NpuLossScaleOptimizer",
    ],
}


def assert_migrated_run(
    script: Path, name: str, cwd: Path, original: float
) -> subprocess.CompletedProcess:
    log = cwd / "standin_log.jsonl"
    proc = run_python([str(script)], cwd, tf_env(standin=True, log=log))
    assert final_loss(proc) == pytest.approx(original, rel=1e-6)
    events = [e["event"] for e in read_log(log)]
    assert "session.refused" not in events and "option.rejected" not in events
    firsts = [events.index(e) for e in EXPECTED_EVENTS[name]]  # ValueError names a missing one
    assert firsts == sorted(firsts), events
    return proc


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_tool_migrated_matches_original(
    tool_output: Path,
    original_runs: dict[str, subprocess.CompletedProcess],
    original_losses: dict[str, float],
    tmp_path: Path,
    name: str,
) -> None:
    script = tool_output / f"{name}_msft" / SCRIPTS[name]
    assert script.read_bytes() != (PROJECTS / name / SCRIPTS[name]).read_bytes()
    proc = assert_migrated_run(script, name, tmp_path, original_losses[name])
    assert REPORTED.findall(proc.stdout) == REPORTED.findall(original_runs[name].stdout)


def test_evaluation_keeps_its_last_batch(
    tool_output: Path, original_runs: dict[str, subprocess.CompletedProcess]
) -> None:
    """tf_estimator_eval: 100 examples batched by 32. The training pipeline got
    drop_remainder=True, the evaluation and prediction pipelines did not (all 100 examples seen,
    not 96), and the prediction config's checkpoints stayed off (NPURunConfig would save every
    100 steps): the original prints these counts, and test_tool_migrated_matches_original
    checks that the migrated run under the double prints the same."""
    name = "tf_estimator_eval"
    migrated = tool_output / f"{name}_msft" / SCRIPTS[name]
    source = migrated.read_text(encoding="utf-8")
    assert source.count("drop_remainder=True") == 1
    assert ".repeat().batch(batch_size, drop_remainder=True)" in source
    expected = ["eval examples 100", "predictions 100", "prediction checkpoints None None"]
    assert REPORTED.findall(original_runs[name].stdout) == expected
    assert ".replace(save_checkpoints_steps=None, save_checkpoints_secs=None)" in source


def test_unmigrated_session_is_refused(tmp_path: Path) -> None:
    """Without npu_config_proto the double refuses the session: a run can catch a migration that
    forgot the session config."""
    source = (GOLDEN / "tf_session_msft" / SCRIPTS["tf_session"]).read_text()
    forgot = source.replace(
        "npu_config_proto(config_proto=tf.compat.v1.ConfigProto())", "tf.compat.v1.ConfigProto()"
    )
    assert forgot != source
    script = tmp_path / "train_session.py"
    script.write_text(forgot)
    proc = run_python([str(script)], tmp_path, tf_env(standin=True))
    assert proc.returncode != 0
    assert "NpuOptimizer" in proc.stderr


# --- (c) a monorepo of programs (fixtures/projects/tf_programs) ----------------------------------

PROGRAMS = PROJECTS / "tf_programs"
# entry (from the project root) -> the standin events that must come, in this order
PROGRAM_EVENTS = {
    # main.py imports no TensorFlow: the device is opened in its __main__ guard, before the
    # runner module builds the first layer
    "classify/main.py": ["npu_device.open", "npu_device.as_default", "keras.first_layer"],
    # TF 2.x running compat.v1 graph code: the TF 2.x adapter's compat mode, then the session
    # with the NPU configuration
    "graph2/train.py": ["npu_device.compat.enable_v1", "npu_config_proto", "session"],
}


def program_env(root: Path, standin: bool, log: Path | None = None) -> dict[str, str]:
    """A program of the monorepo runs with its root on the path (its modules import common)."""
    env = tf_env(standin, log)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), str(root)) if p)
    return env


@pytest.mark.parametrize("entry", sorted(PROGRAM_EVENTS))
def test_program_entry_migrated_matches_original(tmp_path: Path, entry: str) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["-q", "-i", str(PROGRAMS), "-o", str(out)])
    assert result.exit_code == 0, result.output
    migrated = out / "tf_programs_msft"
    original = final_loss(
        run_python([str(PROGRAMS / entry)], tmp_path, program_env(PROGRAMS, standin=False))
    )
    log = tmp_path / "standin_log.jsonl"
    proc = run_python([str(migrated / entry)], tmp_path, program_env(migrated, True, log))
    assert final_loss(proc) == pytest.approx(original, rel=1e-6)
    events = [e["event"] for e in read_log(log)]
    assert "session.refused" not in events and "option.rejected" not in events
    firsts = [events.index(e) for e in PROGRAM_EVENTS[entry]]  # ValueError names a missing one
    assert firsts == sorted(firsts), events
