"""Session makers other than ``tf.Session`` get the NPU config (rule tf.session_config), proven by
running them (pytest -m execution) under the CPU test double of the Ascend TF adapter
(tests/standin), whose session gate refuses a session without the ``NpuOptimizer``: each original
script is refused there, the tool's migrated script runs and computes the same value.

TensorFlow is imported only in the subprocesses (one per script; never in the pytest process).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from click.testing import CliRunner
from required_tools import need_tool
from test_tf_execution import read_log, run_python, tf_env

from ms_fmk_transplt.commands.cli import main

need_tool(
    "tensorflow", importlib.util.find_spec("tensorflow"), "tensorflow is not installed", module=True
)

pytestmark = pytest.mark.execution

HEAD = """import tempfile

import tensorflow as tf
from tensorflow.compat import v1
from tensorflow.python.client import session

tf.compat.v1.disable_eager_execution()
x = tf.constant(2.0) * 3.0
"""
# script -> the code that makes a session and prints "value <x>"
MAKERS = {
    "client_session.py": "with session.Session() as s:\n    print('value', s.run(x))\n",
    "monitored_default.py": (
        "with v1.train.MonitoredSession() as s:\n    print('value', s.run(x))\n"
    ),
    "chief_creator.py": (
        "creator = v1.train.ChiefSessionCreator()\n"
        "with v1.train.MonitoredSession(session_creator=creator) as s:\n"
        "    print('value', s.run(x))\n"
    ),
    "supervisor.py": (
        "sv = v1.train.Supervisor(logdir=tempfile.mkdtemp(), saver=None, summary_op=None)\n"
        "with sv.managed_session() as s:\n"
        "    print('value', s.run(x))\n"
    ),
    "supervisor_prepare.py": (
        "sv = v1.train.Supervisor(logdir=tempfile.mkdtemp(), saver=None, summary_op=None)\n"
        "base = v1.ConfigProto.FromString(b'')\n"  # a config not built by a call here
        "s = sv.prepare_or_wait_for_session('', base)\n"
        "print('value', s.run(x))\n"
        "sv.stop()\n"
    ),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> tuple[Path, Path]:
    """The scripts, and the tool's migration of them."""
    src = tmp_path_factory.mktemp("makers") / "makers"
    src.mkdir()
    for name, code in MAKERS.items():
        (src / name).write_text(HEAD + code, encoding="utf-8")
    out = tmp_path_factory.mktemp("migrated")
    result = CliRunner().invoke(main, ["-q", "--no-cache", "-i", str(src), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return src, out / "makers_msft"


@pytest.mark.parametrize("script", sorted(MAKERS))
def test_original_is_refused_migrated_runs(
    project: tuple[Path, Path], tmp_path: Path, script: str
) -> None:
    src, migrated = project
    # the original under the double's session gate (installed by importing the adapter)
    gated = tmp_path / script
    gated.write_text("import npu_bridge.npu_init\n" + (src / script).read_text(), "utf-8")
    refused = run_python([str(gated)], tmp_path, tf_env(standin=True))
    assert refused.returncode != 0
    assert "NpuOptimizer" in refused.stderr
    # the migrated script: the session gets npu_config_proto(), the graph runs
    log = tmp_path / "log.jsonl"
    proc = run_python([str(migrated / script)], tmp_path, tf_env(standin=True, log=log))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "value 6.0" in proc.stdout
    events = [e["event"] for e in read_log(log)]
    assert "session" in events and "session.refused" not in events
