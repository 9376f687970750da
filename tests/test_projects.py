"""Realistic GPU projects (fixtures/projects/<name>) migrated by the CLI must equal their golden
trees (fixtures/expected/<name>_msft), and change_list.csv must describe the actual diff.

Two more goldens sit in some expected folders, outside the tree they describe:
``msFmkTranspltlog.masked.txt`` (the run's log with timestamps, the version, the input and output
paths and the duration masked) and ``change_list.sim.csv`` (change_list.csv of a ``-sim`` run,
every message and caveat text). After a deliberate change to what the log or a message says,
regenerate them with ``MSFT_REGENERATE_GOLDENS=1 pytest tests/test_projects.py -k golden``
(the tests that wrote a file are skipped, saying so) and review the diff before committing.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import assert_events_match_diff, read_change_list, rows_as_events

from ms_fmk_transplt.commands.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PROJECTS = sorted(p.name for p in (FIXTURES / "projects").iterdir() if p.is_dir())
LOG_GOLDEN, SIM_GOLDEN = "msFmkTranspltlog.masked.txt", "change_list.sim.csv"
# their log pinned by LOG_GOLDEN
LOG_PROJECTS = ["imagenet", "launch_configs", "legacy_gpu", "streams"]
SIM_PROJECTS = ["legacy_gpu", "streams"]  # change_list.csv of a -sim run pinned by SIM_GOLDEN
REGENERATE = os.environ.get("MSFT_REGENERATE_GOLDENS") == "1"


def listing(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode) & 0o111)
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).as_posix() not in (LOG_GOLDEN, SIM_GOLDEN)
    }


def check_golden(golden: Path, got: bytes) -> None:
    """``got`` must be the golden file's bytes (written instead with MSFT_REGENERATE_GOLDENS=1)."""
    if REGENERATE:
        golden.write_bytes(got)
        pytest.skip(f"wrote {golden.relative_to(FIXTURES.parent)}")
    assert golden.is_file(), f"{golden} is missing: see the module docstring to regenerate it"
    assert got.decode("utf-8").splitlines() == golden.read_text(encoding="utf-8").splitlines()
    assert got == golden.read_bytes()


def masked_log(text: str, src: Path, out: Path) -> str:
    """The log without what differs between runs: timestamps, version, paths, duration."""
    text = text.replace(str(out), "<output>").replace(str(src), "<input>")
    text = re.sub(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ", "<time> ", text, flags=re.M)
    text = re.sub(r"ms_fmk_transplt \S+ started", "ms_fmk_transplt <version> started", text)
    return re.sub(r" in \d+(\.\d+)?s; output in ", " in <duration>; output in ", text)


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("out")
    for name in PROJECTS:
        result = CliRunner().invoke(main, ["-i", str(FIXTURES / "projects" / name), "-o", str(out)])
        assert result.exit_code == 0, result.output
    return out


def test_projects_exist() -> None:
    assert {"imagenet", "amp_loop", "ddp", "streams", "toolkit"} <= set(PROJECTS)


@pytest.mark.parametrize("name", PROJECTS)
def test_tree_matches_golden(migrated: Path, name: str) -> None:
    got = listing(migrated / f"{name}_msft")
    log = got.pop("msFmkTranspltlog.txt")
    assert got.pop("unsupported_op.xlsx")  # binary with timestamps: read back in test_report.py
    assert got.pop("report.html")  # names the run's time: read back in test_html_report.py
    assert got == listing(FIXTURES / "expected" / f"{name}_msft")
    assert b"migration completed successfully" in log[0].splitlines()[-1]


@pytest.mark.parametrize("name", PROJECTS)
def test_change_list_matches_diff(migrated: Path, name: str) -> None:
    src_root, out_root = FIXTURES / "projects" / name, migrated / f"{name}_msft"
    rows = read_change_list(out_root / "change_list.csv")
    changed_files = set()
    for src in sorted(src_root.rglob("*.py")):
        rel = src.relative_to(src_root).as_posix()
        before, after = src.read_bytes(), (out_root / rel).read_bytes()
        events = rows_as_events(rows, rel)
        assert bool(events) == (before != after), rel
        if events:
            changed_files.add(rel)
            assert_events_match_diff(before, after, events, f"{name}/{rel}")
    notebooks = {
        p.relative_to(src_root).as_posix()
        for p in src_root.rglob("*.ipynb")
        if p.read_bytes() != (out_root / p.relative_to(src_root)).read_bytes()
    }
    assert {r["File"].split("#cell")[0] for r in rows} == changed_files | notebooks


def test_everything_outside_python_is_byte_identical(migrated: Path) -> None:
    src_root, out_root = FIXTURES / "projects" / "toolkit", migrated / "toolkit_msft"
    for rel in (
        "data/labels.csv",
        "docs/notes.md",
        "assets/logo.bin",
        "scripts/launch.sh",
        "toolkit/model.py",
        "toolkit/legacy_py2.py",
        "toolkit/__init__.py",
    ):
        assert (out_root / rel).read_bytes() == (src_root / rel).read_bytes(), rel
    assert (out_root / "scripts/launch.sh").stat().st_mode & 0o111


def test_skipped_and_unsupported_are_logged(migrated: Path) -> None:
    log = (migrated / "toolkit_msft" / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert "WARNING toolkit/legacy_py2.py:" in " ".join(log.split())
    log = (migrated / "streams_msft" / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert "torch.cuda.nvtx.range_push has no counterpart" in log


@pytest.mark.parametrize("name", LOG_PROJECTS)
def test_log_matches_golden(migrated: Path, name: str) -> None:
    """Every line of msFmkTranspltlog.txt (counts, warnings, the summary) as in the golden."""
    log = (migrated / f"{name}_msft" / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    masked = masked_log(log, FIXTURES / "projects" / name, migrated / f"{name}_msft")
    assert "<time> " in masked and "<output>" in masked and "<input>" in masked
    check_golden(FIXTURES / "expected" / f"{name}_msft" / LOG_GOLDEN, masked.encode("utf-8"))


@pytest.fixture(scope="module")
def similar(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sim")
    for name in SIM_PROJECTS:
        src = str(FIXTURES / "projects" / name)
        result = CliRunner().invoke(main, ["-i", src, "-o", str(out), "-sim", "-q"])
        assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("name", SIM_PROJECTS)
def test_similar_change_list_matches_golden(similar: Path, name: str) -> None:
    """The messages of a -sim run (each similar API's caveat among them) as in the golden."""
    got = (similar / f"{name}_msft" / "change_list.csv").read_bytes()
    assert b",similar." in got and b"[caveat: " in got
    check_golden(FIXTURES / "expected" / f"{name}_msft" / SIM_GOLDEN, got)
