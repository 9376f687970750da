"""--check / --diff / --inplace on lists of files, opt-out comments, JSON report, pre-commit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from required_tools import need_tool, needs_tool

ROOT = Path(__file__).resolve().parent.parent
TOOL = [sys.executable, "-m", "ms_fmk_transplt"]
CUDA = "import torch\n\nx = torch.ones(2).cuda()\ny = torch.ones(2).cuda()  # msft: ignore\n"


def tool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*TOOL, *args], cwd=cwd, capture_output=True, text=True, check=False)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(CUDA)
    return path


def test_check_names_the_lines_and_fails(script: Path) -> None:
    proc = tool("--check", str(script))
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        f"{script.as_posix()}:2:1: imports.torch_npu import torch_npu inserted (registers the NPU "
        "device with torch)",
        f"{script.as_posix()}:3:5: tensor_methods.cuda_call .cuda() -> .npu()",
    ]
    assert script.read_text() == CUDA  # nothing written


def test_check_passes_on_clean_code_and_empty_lists(tmp_path: Path) -> None:
    clean = tmp_path / "ok.py"
    clean.write_text("import torch\nimport torch_npu\n\nx = torch.ones(2).npu()\n")
    assert tool("--check", str(clean)).returncode == 0
    assert tool("--check").returncode == 0


def test_check_severity(tmp_path: Path) -> None:
    path = tmp_path / "bench.py"
    path.write_text("import torch\ntorch.backends.cudnn.benchmark = True\n")
    assert tool("--check", str(path)).returncode == 0  # a caveat, below the default "manual"
    failing = tool("--check", "--fail-on", "caveat", str(path))
    assert failing.returncode == 1
    assert f"{path.as_posix()}:2:1: unsupported.backend_switch torch.backends" in failing.stdout


def test_diff_writes_nothing(script: Path, tmp_path: Path) -> None:
    proc = tool("--diff", str(script))
    assert proc.returncode == 1  # a file would change (as ruff --diff)
    assert "-x = torch.ones(2).cuda()\n+x = torch.ones(2).npu()\n" in proc.stdout
    assert script.read_text() == CUDA
    clean = tmp_path / "clean.py"
    clean.write_text("x = 1\n")
    assert tool("--diff", str(clean)).returncode == 0


def test_inplace_then_check_passes(script: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.py"
    other.write_text(CUDA)
    mode = 0o754
    script.chmod(mode)
    assert tool("--inplace", str(script)).returncode == 0
    text = script.read_text()
    assert "x = torch.ones(2).npu()" in text and "y = torch.ones(2).cuda()  # msft: ignore" in text
    assert script.stat().st_mode & 0o777 == mode
    assert other.read_text() == CUDA  # never touches files it was not given
    assert tool("--check", str(script)).returncode == 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp files left
    assert tool("--fix", str(other)).returncode == 0  # --fix is --inplace, as ruff spells it
    assert "x = torch.ones(2).npu()" in other.read_text()


def test_folders_and_missing_paths(tmp_path: Path, script: Path) -> None:
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "x.py").write_text(CUDA)
    proc = tool("--check", "--report-format", "json", str(tmp_path))
    report = json.loads(proc.stdout)
    assert [f["path"] for f in report["files"]] == [script.as_posix()]
    assert report["exit_code"] == 1 and report["counts"]["would_change"] == 1
    missing = tool("--check", str(tmp_path / "nope.py"))
    assert missing.returncode == 2 and "no such file or folder" in missing.stderr


def test_main_mode_json_report(tmp_path: Path) -> None:
    proc = tool(
        "-i", str(ROOT / "fixtures/projects/ddp"), "-o", str(tmp_path), "--report-format", "json"
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["counts"]["changed"] == 1 and report["counts"]["changes"] > 0
    assert report["files"][0]["path"] == "train_ddp.py"
    assert Path(report["reports"]["change_list"]).is_file()


@needs_tool("git", shutil.which("git"), "git not installed")
def test_pre_commit_hooks(tmp_path: Path) -> None:
    """The real pre-commit, with our hooks from this checkout (try-repo)."""
    pre_commit = shutil.which("pre-commit", path=str(Path(sys.executable).parent))
    need_tool("pre-commit", pre_commit, "pre-commit not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pc-cache"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            args, cwd=repo, env=env, capture_output=True, text=True, check=False, timeout=600
        )

    run("git", "init", "-q")
    (repo / "train.py").write_text(CUDA)
    run("git", "add", "train.py")
    check = run(pre_commit, "try-repo", str(ROOT), "ms-fmk-transplt-check", "--files", "train.py")
    assert check.returncode == 1, check.stdout + check.stderr
    assert "train.py:3:5: tensor_methods.cuda_call .cuda() -> .npu()" in check.stdout
    fix = run(pre_commit, "try-repo", str(ROOT), "ms-fmk-transplt-fix", "--files", "train.py")
    assert fix.returncode == 1  # pre-commit fails a hook that modified files
    text = (repo / "train.py").read_text()
    assert "x = torch.ones(2).npu()" in text
    assert "y = torch.ones(2).cuda()  # msft: ignore" in text  # the ignored line stays
    run("git", "add", "train.py")
    again = run(pre_commit, "try-repo", str(ROOT), "ms-fmk-transplt-check", "--files", "train.py")
    assert again.returncode == 0, again.stdout + again.stderr
    # notebooks are covered too (types_or: [python, jupyter])
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    notebook = {"cells": [{**cell, "source": ["import torch\n", "x = torch.ones(2).cuda()\n"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}  # fmt: skip
    (repo / "explore.ipynb").write_text(json.dumps(notebook))
    run("git", "add", "explore.ipynb")
    nb = run(pre_commit, "try-repo", str(ROOT), "ms-fmk-transplt-check", "--files", "explore.ipynb")
    assert nb.returncode == 1, nb.stdout + nb.stderr
    assert "explore.ipynb#cell0:2:5: tensor_methods.cuda_call" in nb.stdout
