"""Issue 44: ``--npu-option NAME=VALUE`` end to end. A TensorFlow project (an Estimator with a
RunConfig, a TF 2.x Keras script, a TF 1.x Session) run with three options and without any: each
value lands, typed, in the configs the migration creates and nowhere else -- the NPURunConfig
gets all three as keywords, ``npu_device.global_options()`` the two it takes (not
``iterations_per_loop``, an NPURunConfig option), the Session file is the same either way --
and change_list.csv says what was set."""

from __future__ import annotations

import csv
from pathlib import Path

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
RUN_CONFIG = 'NPURunConfig(model_dir="/tmp/m", save_checkpoints_steps=100'
KEYWORDS = ', precision_mode="allow_mix_precision", iterations_per_loop=10, hcom_parallel=True'
DEVICE = (
    'npu_device.global_options().precision_mode = "allow_mix_precision"',
    "npu_device.global_options().hcom_parallel = True",
)


def _run(project: Path, out: Path, *options: str) -> Path:
    args = ["-q", "--no-cache", "-i", str(project), "-o", str(out)]
    for option in options:
        args += ["--npu-option", option]
    result = CliRunner().invoke(run_main, args)
    assert result.exit_code == 0, result.output
    return out / f"{project.name}_msft"


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
    assert (given / "sess.py").read_bytes() == (plain / "sess.py").read_bytes()
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
    ]
