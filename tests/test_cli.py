"""The command line as a user runs it: output tree, refusals, reports read back."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import assert_events_match_diff, read_change_list, rows_as_events

from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.report.change_list import HEADER

GPU_SCRIPT = b"""import torch

device = torch.device("cuda:0")
model = torch.nn.Linear(2, 2).cuda()
"""


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def tree_digest(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = "link:" + os.readlink(p)
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() + oct(p.stat().st_mode)
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    proj = tmp_path / "gpu_project"
    (proj / "pkg").mkdir(parents=True)
    (proj / "train.py").write_bytes(GPU_SCRIPT)
    (proj / "pkg" / "__init__.py").write_bytes(b"")
    (proj / "pkg" / "util.py").write_bytes(b"def f(x):\n    return x.cuda()\n")
    (proj / "README.md").write_bytes(b"# uses cuda\n")
    (proj / "data.bin").write_bytes(bytes(range(256)))
    run_sh = proj / "run.sh"
    run_sh.write_bytes(b"#!/bin/sh\npython train.py\n")
    run_sh.chmod(0o755)
    os.symlink("README.md", proj / "LINK.md")
    return proj


def test_folder_migration(project: Path, tmp_path: Path) -> None:
    before = tree_digest(project)
    code, out = run("-i", str(project), "-o", str(tmp_path / "out"))
    assert code == 0, out
    msft = tmp_path / "out" / "gpu_project_msft"
    assert tree_digest(project) == before  # the input is never modified
    assert (msft / "train.py").read_bytes() == (
        b'import torch\nimport torch_npu\n\ndevice = torch.device("npu:0")\n'
        b"model = torch.nn.Linear(2, 2).npu()\n"
    )
    for name in ("README.md", "data.bin", "pkg/__init__.py"):
        assert (msft / name).read_bytes() == (project / name).read_bytes()
    assert stat.S_IMODE((msft / "run.sh").stat().st_mode) == 0o755
    assert os.readlink(msft / "LINK.md") == "README.md"
    assert {p.name for p in tmp_path.joinpath("out").iterdir()} == {"gpu_project_msft"}

    rows = read_change_list(msft / "change_list.csv")
    assert tuple(rows[0].keys()) == HEADER
    assert {r["File"] for r in rows} == {"train.py", "pkg/util.py"}
    for rel in ("train.py", "pkg/util.py"):
        assert_events_match_diff(
            (project / rel).read_bytes(), (msft / rel).read_bytes(), rows_as_events(rows, rel), rel
        )
    log = (msft / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert "analysed train.py: 3 change(s)" in log
    assert "migration completed successfully" in log.splitlines()[-1]


def test_single_file_input(project: Path, tmp_path: Path) -> None:
    code, out = run("-i", str(project / "train.py"), "-o", str(tmp_path / "o"))
    assert code == 0, out
    msft = tmp_path / "o" / "gpu_project_msft"
    assert sorted(p.name for p in msft.iterdir()) == [
        "advice.csv",
        "change_list.csv",
        "msFmkTranspltlog.txt",
        "report.html",
        "train.py",
        "unsupported_op.csv",
        "unsupported_op.xlsx",
    ]


def test_existing_output_is_refused_then_overwritten(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    stale = out / "gpu_project_msft" / "stale.txt"
    stale.parent.mkdir(parents=True)
    stale.write_text("old")
    sibling = out / "keep.txt"
    sibling.write_text("mine")
    code, text = run("-i", str(project), "-o", str(out))
    assert code == 2
    assert "already exists; pass --overwrite" in text
    assert stale.exists()
    code, text = run("-i", str(project), "-o", str(out), "--overwrite")
    assert code == 0, text
    assert not stale.exists() and (out / "gpu_project_msft" / "train.py").exists()
    assert sibling.read_text() == "mine"
    assert sorted(p.name for p in out.iterdir()) == ["gpu_project_msft", "keep.txt"]


@pytest.mark.parametrize(
    ("input_rel", "output_rel", "message"),
    [
        ("missing", "out", "input does not exist"),
        ("gpu_project/README.md", "out", "input must be a folder or a .py file"),
        ("gpu_project", "gpu_project/out", "output must not be inside the input folder"),
        ("gpu_project", "gpu_project", "output must not be the input folder itself"),
        ("gpu_project", "gpu_project/README.md", "output exists and is not a folder"),
    ],
)
def test_bad_paths(project: Path, tmp_path: Path, input_rel, output_rel, message) -> None:
    before = tree_digest(project)
    code, text = run("-i", str(tmp_path / input_rel), "-o", str(tmp_path / output_rel))
    assert code == 2
    assert message in text
    assert len(text.strip().splitlines()) == 1
    assert tree_digest(project) == before


def test_user_report_names_are_never_overwritten(project: Path, tmp_path: Path) -> None:
    (project / "change_list.csv").write_text("user,data\n")
    code, text = run("-i", str(project), "-o", str(tmp_path / "out"))
    assert code == 0, text
    msft = tmp_path / "out" / "gpu_project_msft"
    assert (msft / "change_list.csv").read_text() == "user,data\n"
    assert read_change_list(msft / "change_list.msft.csv")[0]["File"] == "pkg/util.py"
    log = (msft / "msFmkTranspltlog.txt").read_text()
    assert (
        "the project has its own change_list.csv; this run's report is change_list.msft.csv" in log
    )


def test_unparsable_file_is_copied_and_logged(project: Path, tmp_path: Path) -> None:
    (project / "old.py").write_bytes(b"import torch\nprint 'x', torch.cuda.device_count()\n")
    code, _ = run("-i", str(project), "-o", str(tmp_path / "out"))
    assert code == 0
    msft = tmp_path / "out" / "gpu_project_msft"
    assert (msft / "old.py").read_bytes() == (project / "old.py").read_bytes()
    log = (msft / "msFmkTranspltlog.txt").read_text()
    assert "WARNING old.py:2: [parse.syntax_error] cannot parse" in " ".join(log.split())


def test_running_on_its_own_output_changes_nothing(project: Path, tmp_path: Path) -> None:
    assert run("-i", str(project), "-o", str(tmp_path / "a"))[0] == 0
    first = tmp_path / "a" / "gpu_project_msft"
    code, _ = run("-i", str(first), "-o", str(tmp_path / "b"))
    assert code == 0
    second = tmp_path / "b" / "gpu_project_msft_msft"
    # the first run's reports are now files of the project: ours get the .msft names
    assert read_change_list(second / "change_list.msft.csv") == []
    assert (second / "change_list.csv").read_bytes() == (first / "change_list.csv").read_bytes()
    for rel in ("train.py", "pkg/util.py"):
        assert (second / rel).read_bytes() == (first / rel).read_bytes()


def test_console_script_and_module_entry(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("ms_fmk_transplt")
    assert script.exists(), "console script not installed next to the interpreter"
    for cmd in ([sys.executable, "-m", "ms_fmk_transplt", "--help"], [str(script), "-h"]):
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
        assert "-i, --input" in proc.stdout and "Exit codes" in proc.stdout
        assert "\n  rule " in proc.stdout  # --help lists `rule`


def test_missing_required_option_is_a_usage_error() -> None:
    code, text = run("-i", "x")
    assert code == 2 and "Missing option '-o'" in text


def test_the_tool_never_imports_torch(project: Path, tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from ms_fmk_transplt.run.pipeline import RunOptions, run\n"
        f"run(RunOptions(input={str(project)!r}, output={str(tmp_path / 'o')!r}))\n"
        "assert not [m for m in sys.modules if m == 'torch' or m.startswith('torch.')]\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--chek", "x.py"], "no such option --chek; did you mean --check?"),
        (["-i", "x"], "Missing option '-o' / '--output'"),
        (
            ["distributed", "-m", "main.py", "-i", "X", "-o", "Y"],
            "-i, -o belong to the run, before `distributed`: ms_fmk_transplt -i INPUT -o "
            "OUTPUT [options] distributed -m MAIN -t MODEL",
        ),
    ],
)
def test_usage_errors_are_one_line(args: list[str], message: str) -> None:
    """click's three-line usage errors become the one line README promises, with a hint for
    the usual slips."""
    proc = subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", *args], capture_output=True, text=True
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"ms_fmk_transplt: error: {message}\n"


def test_a_bare_path_is_told_the_modes(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", "src"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        "ms_fmk_transplt: error: src: a path needs a mode: --check src (report), --diff or "
        "--inplace src, or -i src -o OUTPUT (write a migrated copy)\n"
    )
