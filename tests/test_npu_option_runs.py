"""Issue 44: ``--npu-option NAME=VALUE`` end to end. A TensorFlow project (an Estimator with a
RunConfig, a TF 2.x Keras script, a TF 1.x Session) run with three options and without any: each
value lands, typed, in the configs the migration creates and nowhere else -- the NPURunConfig
gets all three as keywords, ``npu_device.global_options()`` the two it takes (not
``iterations_per_loop``, an NPURunConfig option), the Session file is the same either way --
and change_list.csv says what was set."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_fmk_transplt.commands.cli import main as run_main

FILES = {
    "est.py": """import tensorflow as tf


def model_fn(features, labels, mode):
    return tf.estimator.EstimatorSpec(mode, loss=tf.constant(0.0))


config = tf.estimator.RunConfig(model_dir="/tmp/m", save_checkpoints_steps=100)
estimator = tf.estimator.Estimator(model_fn=model_fn, config=config)
""",
    "keras2.py": """import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(tf.zeros((4, 2)), tf.zeros((4, 1)), epochs=1)
""",
    "sess.py": """import tensorflow as tf

config = tf.compat.v1.ConfigProto()
with tf.compat.v1.Session(config=config) as sess:
    sess.run(tf.constant(1.0))
""",
}
OPTIONS = (
    "precision_mode= allow_mix_precision",  # a space after = is dropped
    "iterations_per_loop=10",
    "hcom_parallel=true",
)
ROOT = Path(__file__).resolve().parent.parent
FLAG = "--npu-option"
RUN_CONFIG = 'NPURunConfig(model_dir="/tmp/m", save_checkpoints_steps=100'
KEYWORDS = ', precision_mode="allow_mix_precision", iterations_per_loop=10, hcom_parallel=True'
DEVICE = (
    'npu_device.global_options().precision_mode = "allow_mix_precision"',
    "npu_device.global_options().hcom_parallel = True",
)

SESSION = (
    "npu_optimizer = [o for o in config.graph_options.rewrite_options.custom_optimizers if o.name"
    ' == "NpuOptimizer"][0]',
    'npu_optimizer.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")',
    'npu_optimizer.parameter_map["hcom_parallel"].b = True',
)


def _run(project: Path, out: Path, *options: str, quiet: bool = True) -> Path:
    args = [*(["-q"] if quiet else []), "--no-cache", "-i", str(project), "-o", str(out)]
    for option in options:
        args += ["--npu-option", option]
    result = CliRunner().invoke(run_main, args)
    assert result.exit_code == 0, result.output
    (out / "terminal.txt").write_text(result.output, encoding="utf-8")
    return out / f"{project.name}_msft"


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    for name, text in files.items():
        (project / name).write_text(text, encoding="utf-8")
    return project


def _warnings(tree: Path) -> list[str]:
    log = (tree / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    return [line.split(" WARNING ", 1)[1] for line in log.splitlines() if " WARNING --npu" in line]


def _changes(tree: Path) -> list[tuple[str, str, str]]:
    with (tree / "change_list.csv").open(encoding="utf-8", newline="") as fh:
        return [(r["File"], r["Message"], r["Rule"]) for r in csv.DictReader(fh)]


def test_each_npu_option_lands_in_the_configs_the_migration_creates(tmp_path: Path) -> None:
    project = tmp_path / "tf_project"
    project.mkdir()
    for name, text in FILES.items():
        (project / name).write_text(text, encoding="utf-8")
    given = _run(project, tmp_path / "with", *OPTIONS)
    plain = _run(project, tmp_path / "without")
    est, est_plain = (given / "est.py").read_text(), (plain / "est.py").read_text()
    assert f"{RUN_CONFIG})" in est_plain
    assert est == est_plain.replace(f"{RUN_CONFIG})", f"{RUN_CONFIG}{KEYWORDS})")
    keras, keras_plain = (given / "keras2.py").read_text(), (plain / "keras2.py").read_text()
    opened = "npu_device.open().as_default()\n"
    assert opened in keras_plain
    assert keras == keras_plain.replace(opened, "".join(f"{line}\n" for line in DEVICE) + opened)
    # the session config takes precision_mode and hcom_parallel on its NpuOptimizer; not
    # iterations_per_loop (a session needs set_iteration_per_loop in its training loop for it)
    sess, sess_plain = (given / "sess.py").read_text(), (plain / "sess.py").read_text()
    wrapped = "config = npu_config_proto(config_proto=tf.compat.v1.ConfigProto())\n"
    assert wrapped in sess_plain
    assert sess == sess_plain.replace(wrapped, wrapped + "".join(f"{x}\n" for x in SESSION))
    assert "reached no config" not in (given / "msFmkTranspltlog.txt").read_text()
    added = sorted(set(_changes(given)) - set(_changes(plain)))
    assert added == [
        (
            "est.py",
            "NPURunConfig arguments: precision_mode= added, iterations_per_loop= added, "
            "hcom_parallel= added",
            "tf.run_config",
        ),
        ("keras2.py", "'--npu-option hcom_parallel set", "tf.npu_device"),  # ' : not a formula
        ("keras2.py", "'--npu-option precision_mode set", "tf.npu_device"),
        ("sess.py", "'--npu-option hcom_parallel set", "tf.session_config"),
        ("sess.py", "'--npu-option precision_mode set", "tf.session_config"),
        ("sess.py", f"the NpuOptimizer of the session config, for {FLAG}", "tf.session_config"),
    ]


def test_a_program_of_sessions_only_gets_the_options_its_sessions_take(tmp_path: Path) -> None:
    """Sessions only: the options a session takes land on its config's NpuOptimizer (and the
    adapter's double receives them); iterations_per_loop, which a session takes only with
    set_iteration_per_loop in its loop, reaches no config: one warning, exit 0."""
    project = _project(tmp_path, {"sess.py": FILES["sess.py"]})
    given = _run(project, tmp_path / "with", *OPTIONS, quiet=False)
    plain = _run(project, tmp_path / "without")
    wrapped = "config = npu_config_proto(config_proto=tf.compat.v1.ConfigProto())\n"
    sess_plain = (plain / "sess.py").read_text()
    expected = sess_plain.replace(wrapped, wrapped + "".join(f"{x}\n" for x in SESSION))
    assert (given / "sess.py").read_text() == expected != sess_plain
    warning = (
        "--npu-option iterations_per_loop reached no config: it goes to NPURunConfig "
        "(Estimators), and the migration created or changed none (a session runs it only with "
        "npu_bridge's util.set_iteration_per_loop(sess, train_op, N) in its training loop: add "
        "that call by hand)"
    )
    assert _warnings(given) == [warning]
    terminal = " ".join((tmp_path / "with" / "terminal.txt").read_text().split())
    assert "--npu-option iterations_per_loop reached no config" in terminal
    assert _warnings(plain) == []
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("tensorflow is not installed: the migrated session is not run")
    log = tmp_path / "standin.log"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MSFT_STANDIN_LOG")}
    env.update(TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="", MSFT_STANDIN_LOG=str(log))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests" / "standin"), str(ROOT)])
    ran = subprocess.run(
        [sys.executable, "sess.py"], cwd=given, env=env, capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    sessions = [json.loads(x) for x in log.read_text().splitlines()]
    sessions = [e["options"] for e in sessions if e["event"] == "session"]
    assert sessions == [["hcom_parallel", "precision_mode"]]


def test_an_input_without_tensorflow_says_the_options_reached_nothing(tmp_path: Path) -> None:
    project = _project(tmp_path, {"train.py": "import torch\nx = torch.ones(2).cuda()\n"})
    options = ("precision_mode=allow_mix_precision", "hcom_parallel=1")
    given = _run(project, tmp_path / "with", *options)
    plain = _run(project, tmp_path / "without")
    assert (given / "train.py").read_bytes() == (plain / "train.py").read_bytes()
    assert _warnings(given) == [
        "--npu-option precision_mode reached no config: the input has no TensorFlow file",
        "--npu-option hcom_parallel reached no config: the input has no TensorFlow file",
    ]


def test_without_tensorflow_the_warning_is_on_the_terminal_in_the_log_and_in_json(
    tmp_path: Path,
) -> None:
    """Through the real entry point: one warning line on the terminal and in the log; the JSON
    summary (whose terminal shows nothing else) has it in its run warnings."""
    project = _project(tmp_path, {"train.py": "import torch\nx = torch.ones(1).cuda()\n"})
    warning = "--npu-option precision_mode reached no config: the input has no TensorFlow file"
    base = [sys.executable, "-m", "ms_fmk_transplt", "-i", str(project), "--no-cache"]
    option = ["--npu-option", "precision_mode=allow_mix_precision"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    text = subprocess.run(
        [*base, "-o", str(tmp_path / "text"), *option], capture_output=True, text=True, env=env
    )
    assert text.returncode == 0, text.stderr
    assert [line for line in text.stdout.splitlines() if "--npu-option" in line] == [
        f"WARNING {warning}"
    ]
    assert _warnings(tmp_path / "text" / "project_msft") == [warning]
    data = subprocess.run(
        [*base, "-o", str(tmp_path / "json"), *option, "--output-format", "json"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert data.returncode == 0, data.stderr
    assert json.loads(data.stdout)["warnings"] == [{"level": "WARNING", "message": warning}]
