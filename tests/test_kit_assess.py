"""``ms_fmk_transplt kit assess`` (issue 48), the command and its tree, read back from what it
writes: the original project with the kit's calls at the training loop (not migrated), the
runtime and msft_ops.json beside MAIN (the target version's operator support, from the tables),
run_assess.sh (shellcheck; PYTHON and --steps reach the script), the refusals."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_checked
from required_tools import needs_tool

from ms_fmk_transplt.commands.kit_cli import kit
from ms_fmk_transplt.report.kit_assess import ASSESS_RUNTIME
from ms_fmk_transplt.tables import load_tables
from ms_fmk_transplt.tables.assess_support import operator_support

ROOT = Path(__file__).resolve().parent.parent
KITS = ROOT / "ms_fmk_transplt" / "kits"
TRAIN = """import torch
import torch.nn.functional as F


def main():
    model = torch.nn.Linear(4, 4).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        x = torch.randn(2, 4).cuda()
        out = F.interpolate(model(x)[None], scale_factor=2)
        out.mean().backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def _project(tmp_path: Path, source: str = TRAIN) -> Path:
    project = tmp_path / "proj"
    project.mkdir(parents=True)
    (project / "train.py").write_text(source, encoding="utf-8")
    return project


def run_assess(project: Path, out: Path, *more: str) -> Path:
    args = ["assess", "-q", "--no-cache", "-i", str(project), "-o", str(out), "-m", "train.py"]
    result = CliRunner().invoke(kit, [*args, *more])
    assert result.exit_code == 0, result.output
    return out / f"{project.name}_msft_assess"


def test_the_original_gets_the_calls_at_the_loop_and_stays_unmigrated(tmp_path: Path) -> None:
    tree = run_assess(_project(tmp_path), tmp_path / "out")
    lines = (tree / "train.py").read_text(encoding="utf-8").splitlines()
    begin = lines.index("    msft_kit.assess_begin()")
    assert lines[begin + 1] == "    for step in range(10):"
    assert lines[begin + 2] == "        msft_kit.assess_tick()"
    assert "import msft_kit" in lines
    # not migrated: the CUDA code stays, nothing of torch_npu comes in
    assert "    model = torch.nn.Linear(4, 4).cuda()" in lines
    assert "        x = torch.randn(2, 4).cuda()" in lines
    assert not any("torch_npu" in line or ".npu()" in line for line in lines)
    with (tree / "change_list.csv").open(encoding="utf-8", newline="") as fh:
        rules = [row["Rule"] for row in csv.DictReader(fh)]
    assert rules == ["kit.import", "kit.assess_start", "kit.assess_step", "kit.assess_end"]
    assert lines[lines.index("        optimizer.step()") + 1] == "    msft_kit.assess_end()"
    for name in ASSESS_RUNTIME:  # the runtime files kits/ holds, copied as they are
        if (KITS / name).is_file():
            assert (tree / name).read_bytes() == (KITS / name).read_bytes()
        else:
            assert not (tree / name).exists()
    readme = (tree / "KIT_README.md").read_text(encoding="utf-8")
    assert "| `train.py:9` | `kit.assess_start` | `msft_kit.assess_begin()` |" in readme
    for column in ("API", "Calls", "Dtypes", "Shapes", "Dynamic", "NPU", "Where"):
        assert f"| `{column}` |" in readme
    compile((tree / "train.py").read_text(encoding="utf-8"), "train.py", "exec")


TF2_SCRIPT = """import tensorflow as tf


def main():
    print(tf.constant(1))


if __name__ == "__main__":
    main()
"""


def test_a_tensorflow_script_beside_main_stays_as_written(tmp_path: Path) -> None:
    """The tree is the project as written: a TF 2.x script beside MAIN (timm's export
    scripts, judged TensorFlow through an optional reader) got the adapter's lines."""
    project = _project(tmp_path)
    (project / "export.py").write_text(TF2_SCRIPT, encoding="utf-8")
    tree = run_assess(project, tmp_path / "out")
    assert (tree / "export.py").read_text(encoding="utf-8") == TF2_SCRIPT
    support = json.loads((tree / "msft_ops.json").read_text(encoding="utf-8"))
    lines = (tree / "train.py").read_text(encoding="utf-8").splitlines()
    kit_lines = [i for i, line in enumerate(lines, 1) if "msft_kit" in line]
    assert support["inserted"] == {"train.py": kit_lines}  # taken off by the runtime


WITH_A_KEPT_ARM = """import torch


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()
    elif device.type == "npu":
        torch.npu.synchronize()


def main():
    model = torch.nn.Linear(4, 1)
    for step in range(10):
        model(torch.randn(2, 4)).mean().backward()  # msft: ignore


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("kind", ["assess", "profile"])
def test_a_script_with_a_kept_line_still_gets_the_calls(kind: str, tmp_path: Path) -> None:
    """A CUDA arm beside an NPU arm, and a `# msft: ignore` line, are kept as written: the
    kit's calls, inserts the user asked for, are a change of their own (they were lost)."""
    project = _project(tmp_path, WITH_A_KEPT_ARM)
    args = [kind, "-q", "--no-cache", "-i", str(project), "-o", str(tmp_path / "out")]
    result = CliRunner().invoke(kit, [*args, "-m", "train.py"])
    assert result.exit_code == 0, result.output
    (tree,) = (tmp_path / "out").glob(f"proj_msft_{kind}")
    text = (tree / "train.py").read_text(encoding="utf-8")
    assert f"msft_kit.{kind}_begin()" in text and f"msft_kit.{kind}_tick()" in text
    assert '    if device.type == "cuda":\n        torch.cuda.synchronize()' in text


def test_msft_ops_json_is_the_target_versions_support(tmp_path: Path) -> None:
    tree = run_assess(_project(tmp_path), tmp_path / "out", "-v", "2.6.0")
    ops = json.loads((tree / "msft_ops.json").read_text(encoding="utf-8"))
    table = load_tables("2.6.0").operators
    assert ops["version"] == "2.6.0"
    assert set(ops["apis"]) == set(table.entries)
    for api, entry in table.entries.items():
        want = "restricted" if entry.category == "restricted_op" else "unsupported"
        assert ops["apis"][api]["status"] == want
        assert set(ops["apis"][api]["arguments"]) == set(entry.keywords)
    interpolate = ops["apis"]["torch.nn.functional.interpolate"]
    assert table.entries["torch.nn.functional.interpolate"].category == "restricted_op"
    assert interpolate["status"] == "restricted"
    assert "scale_factor" in interpolate["arguments"]["scale_factor"]
    assert "float32" in interpolate["dtypes"]
    assert ops["apis"]["torch.std_mean"]["dtypes"] is None  # unsupported: no dtype list
    newest = run_assess(_project(tmp_path / "b"), tmp_path / "out2")
    version = json.loads((newest / "msft_ops.json").read_text(encoding="utf-8"))["version"]
    assert version == load_tables().torch_npu_version  # the newest without -v


def test_dtype_words_and_argument_clauses_come_from_the_restriction() -> None:
    ops = operator_support(load_tables("2.13.0").operators)
    lstm = ops["torch.nn.LSTM"]
    assert lstm["dtypes"] == ["float32"]
    assert lstm["arguments"]["proj_size"] == "the `proj_size` argument is not supported"
    # "`dilation`: 1 only" lists a value, not dtypes: max_pool1d's dtypes are its input's
    assert ops["torch.nn.functional.max_pool1d"]["dtypes"] == ["float16", "float32"]
    assert ops["torch.nn.GRU"]["dtypes"] is None  # its restriction names no dtype


def _bash(script: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_checked(["bash", str(script), *args], env)


@needs_tool("shellcheck", shutil.which("shellcheck"), "shellcheck not installed")
def test_the_launcher_passes_shellcheck(tmp_path: Path) -> None:
    tree = run_assess(_project(tmp_path), tmp_path / "out")
    script = tree / "run_assess.sh"
    assert os.access(script, os.X_OK)
    proc = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def _fake_python(tmp_path: Path, writes: bool) -> tuple[Path, Path]:
    """A PYTHON that records its arguments and environment (and writes ops.csv if asked)."""
    seen = tmp_path / "seen.txt"
    fake = tmp_path / "python"
    body = f'#!/bin/sh\nprintf "%s\\n" "$@" > "{seen}.argv"\nenv > "{seen}"\n'
    if writes:
        body += 'echo "API,Calls" > "$MSFT_ASSESS_DIR/ops.csv"\n'
    fake.write_text(body)
    fake.chmod(0o755)
    return fake, seen


def test_python_and_steps_reach_the_script(tmp_path: Path) -> None:
    tree = run_assess(_project(tmp_path), tmp_path / "out", "--steps", "3")
    fake, seen = _fake_python(tmp_path, writes=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MSFT_ASSESS")}
    proc = _bash(tree / "run_assess.sh", {**env, "PYTHON": str(fake)}, "--epochs", "1")
    assert proc.returncode == 0, proc.stderr
    argv = Path(f"{seen}.argv").read_text().splitlines()
    assert argv == [str(tree / "train.py"), "--epochs", "1"]
    got = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    assert got["MSFT_ASSESS_STEPS"] == "3"
    assert got["MSFT_ASSESS_DIR"] == str(tree / "assess")
    assert f"assessment: {tree / 'assess' / 'ops.csv'}" in proc.stdout
    env.update(PYTHON=str(fake), MSFT_ASSESS_STEPS="7")  # the variable wins over --steps
    assert _bash(tree / "run_assess.sh", env).returncode == 0
    assert "MSFT_ASSESS_STEPS=7" in seen.read_text().splitlines()
    plain = run_assess(_project(tmp_path / "b"), tmp_path / "out2")
    assert 'MSFT_ASSESS_STEPS="${MSFT_ASSESS_STEPS:-5}"' in (plain / "run_assess.sh").read_text()


def test_a_run_that_writes_no_ops_csv_fails(tmp_path: Path) -> None:
    tree = run_assess(_project(tmp_path), tmp_path / "out")
    fake, _ = _fake_python(tmp_path, writes=False)
    (tree / "assess").mkdir()
    (tree / "assess" / "ops.csv").write_text("an earlier run's\n")  # replaced, not taken
    proc = _bash(tree / "run_assess.sh", {**os.environ, "PYTHON": str(fake)})
    assert proc.returncode == 1
    assert "error: no ops.csv in" in proc.stderr


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return run_checked([sys.executable, "-m", "ms_fmk_transplt", *args], env, cwd=cwd)


@pytest.mark.parametrize(
    ("source", "why"),
    [
        (
            "import torch\nx = torch.ones(2).cuda()\nprint(x.sum())\n",
            "kit assess -m: no training loop found in train.py: no optimizer step",
        ),
        (
            "import torch\nimport torch_npu\nfor x in data:\n    optimizer.step()\n",
            "kit assess -m: the script imports torch_npu: the assess kit records the original",
        ),
        (
            "import tensorflow as tf\nfor x in data:\n    optimizer.step()\n",
            "kit assess -m: a TensorFlow script: the assess kit records the torch APIs",
        ),
    ],
    ids=["no_loop", "migrated", "tensorflow"],
)
def test_refused_with_one_line_and_nothing_written(tmp_path: Path, source: str, why: str) -> None:
    project = _project(tmp_path, source)
    out = tmp_path / "out"
    proc = _cli("kit", "assess", "-i", str(project), "-o", str(out), "-m", "train.py", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("ms_fmk_transplt: error: train.py: " + why), proc.stderr
    assert proc.stderr.rstrip().endswith("nothing written")
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("assess", "--steps", "0"), "'--steps': 0 is not in the range 1<=x<=1000"),
        (("assess", "--steps", "1001"), "'--steps': 1001 is not in the range 1<=x<=1000"),
        (("aoe", "--steps", "3"), "kit aoe: --steps is an option of kit assess"),
    ],
)
def test_steps_is_bounded_and_for_assess_only(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    project = _project(tmp_path)
    out = tmp_path / "out"
    kind, *more = args
    proc = _cli(
        "kit", kind, "-i", str(project), "-o", str(out), "-m", "train.py", *more, cwd=tmp_path
    )
    assert proc.returncode == 2
    assert message in proc.stderr
    assert not out.exists()
