"""``--zoo`` refuses, as a single project's run does, with one line and exit 2 and nothing
written: a re-run into an output that holds its models' folders or its summary (without
--overwrite), and an input with no model sub-folder (a plain project)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CUDA = "import torch\nx = torch.ones(1).cuda()\ny = torch.cuda.Stream()\n"


def tool(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", "-q", "--no-cache", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )


def checksums(folder: Path) -> dict[str, tuple[str, float]]:
    """Every file and folder under ``folder``: its content's hash and its modification time."""
    seen: dict[str, tuple[str, float]] = {}
    for path in sorted(folder.rglob("*")):
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        seen[str(path.relative_to(folder))] = (digest, path.stat().st_mtime)
    return seen


def zoo(root: Path) -> Path:
    for model in ("alpha", "beta"):
        (root / model).mkdir(parents=True)
        (root / model / "train.py").write_text(CUDA)
    return root


def test_a_zoo_rerun_without_overwrite_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    src, out = zoo(tmp_path / "zoo"), tmp_path / "out"
    assert tool("--zoo", "-i", str(src), "-o", str(out)).returncode == 0
    before = checksums(out)
    assert "alpha_msft/report.html" in before and "zoo_zoo_summary.csv" in before
    again = tool("--zoo", "-i", str(src), "-o", str(out))
    assert again.returncode == 2, again.stderr
    lines = again.stderr.splitlines()
    assert len(lines) == 1 and again.stdout == ""
    assert lines[0].startswith(f"ms_fmk_transplt: error: {out / 'zoo_zoo_summary.csv'}: ")
    assert "already exists" in lines[0] and "--overwrite" in lines[0]
    assert checksums(out) == before
    # with --overwrite the summary keeps its links to the models' reports
    assert tool("--zoo", "-i", str(src), "-o", str(out), "--overwrite").returncode == 0
    page = (out / "zoo_zoo_report.html").read_text(encoding="utf-8")
    assert 'href="alpha_msft/report.html"' in page and 'href="beta_msft/report.html"' in page


def test_a_zoo_whose_model_folder_is_there_is_refused(tmp_path: Path) -> None:
    """Only one model's output there (no summary yet): still nothing written."""
    src, out = zoo(tmp_path / "zoo"), tmp_path / "out"
    (out / "beta_msft").mkdir(parents=True)
    (out / "beta_msft" / "notes.txt").write_text("the user's\n")
    before = checksums(out)
    done = tool("--zoo", "-i", str(src), "-o", str(out))
    assert done.returncode == 2
    assert done.stderr == (
        f"ms_fmk_transplt: error: {out / 'beta_msft'}: already exists; "
        "pass --overwrite to replace it\n"
    )
    assert checksums(out) == before


@pytest.mark.parametrize("shape", ["files only", "docs only"])
def test_a_plain_project_given_to_zoo_is_refused(tmp_path: Path, shape: str) -> None:
    src, out = tmp_path / "proj", tmp_path / "out"
    src.mkdir()
    (src / "train.py").write_text(CUDA)
    if shape == "docs only":
        (src / "docs").mkdir()
        (src / "docs" / "conf.py").write_text("project = 'p'\n")
    done = tool("--zoo", "-i", str(src), "-o", str(out))
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"ms_fmk_transplt: error: {src}: no model sub-folder")
    assert "run without --zoo" in line
    assert not out.exists()
