"""``--deps``: a project (fixtures/deps/project) calling fake installed libraries
(fixtures/deps/site-packages) whose CUDA use is direct, two calls down, through ``self``,
inherited from a base class, run at import, re-exported through ``__init__``, behind
``torch.cuda.is_available()`` (deps.cpu_path), or absent (no row). Checked: each row's rule,
API, project line and the library line its path ends at (unsupported_op.csv's Tips; the line
found by searching the library file, never written down here); the trees read are left as
they were and nothing of the library is copied; without --deps the outputs are the same but
for the deps rows; the cache; a bad folder. Then executed under the CPU stand-in (real CPU
torch: no CUDA): each call flagged deps.cuda_path really fails in the library, at the line the
row names, and the deps.cpu_path call runs."""

from __future__ import annotations

import csv
import hashlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import STANDIN, comparable, tool
from required_tools import need_module

ROOT = Path(__file__).resolve().parent.parent
DEPS = ROOT / "fixtures" / "deps"
PROJECT = DEPS / "project"
SITE = DEPS / "site-packages"
CUDA, CPU = "deps.cuda_path", "deps.cpu_path"
DEPS_RULES = (CUDA, CPU)
REPORTS = {"unsupported_op.csv", "unsupported_op.xlsx", "msFmkTranspltlog.txt", "report.html"}


@dataclass(frozen=True)
class Case:
    file: str  # of the project
    call: str  # the project's code that calls the library (its line holds it)
    rule: str
    api: str  # the OP column
    library_file: str  # under site-packages: where the path ends
    cuda_line: str  # the code of the library's line the path ends at
    runs: tuple[str, ...]  # how to run the case in the migrated project


CASES = {
    "direct": Case(
        "train.py",
        "fakelib_direct.move(x)",
        CUDA,
        "fakelib_direct.move",
        "fakelib_direct/__init__.py",
        "return x.cuda()",
        ("train.py", "direct"),
    ),
    "two_calls_down": Case(
        "train.py",
        "fakelib_deep.prepare(x)",
        CUDA,
        "fakelib_deep.prepare",
        "fakelib_deep/__init__.py",
        "torch.cuda.synchronize()",
        ("train.py", "deep"),
    ),
    "through_self": Case(
        "train.py",
        "runner.step(x)",
        CUDA,
        "fakelib_selfcall.Runner.step",
        "fakelib_selfcall/__init__.py",
        "torch.cuda.synchronize()",
        ("train.py", "through_self"),
    ),
    "base_class": Case(
        "train.py",
        "Child().run(x)",
        CUDA,
        "fakelib_base.Child.run",
        "fakelib_base/base.py",
        'return x.to("cuda:0")',
        ("train.py", "inherited"),
    ),
    "reexported": Case(
        "train.py",
        "api.fit(x)",
        CUDA,
        "fakelib_reexport.Api.fit",
        "fakelib_reexport/core.py",
        "torch.cuda.synchronize()",
        ("train.py", "reexported"),
    ),
    "import_time": Case(
        "boot.py",
        "import fakelib_boot",
        CUDA,
        "fakelib_boot",
        "fakelib_boot/__init__.py",
        "torch.cuda.set_device(0)",
        ("boot.py",),
    ),
    "derived_class": Case(  # (derived.py imports no torch: the family runs on it all the same)
        "derived.py",
        "class Mine(Model):",
        CUDA,
        "fakelib_model.Model",
        "fakelib_model/__init__.py",
        "self.index = torch.cuda.current_device()",
        ("derived.py",),
    ),
    "guarded": Case(
        "train.py",
        "fakelib_guarded.place(x)",
        CPU,
        "fakelib_guarded.place",
        "fakelib_guarded/__init__.py",
        "x = x.cuda()",
        ("train.py", "guarded"),
    ),
}
# loop.py calls fakelib_direct.move twice (one folded row) and fakelib_deep.prepare once
LOOP_ROWS = {("loop.py", "fakelib_direct.move", CUDA), ("loop.py", "fakelib_deep.prepare", CUDA)}
VERSIONS = {  # each fake library's dist-info says its version
    "fakelib_base": "2.0.0",
    "fakelib_boot": "0.9.0",
    "fakelib_clean": "1.1.0",
    "fakelib_deep": "0.2.1",
    "fakelib_direct": "1.0.0",
    "fakelib_guarded": "1.4.2",
    "fakelib_model": "0.3.0",
    "fakelib_reexport": "5.0.0",
    "fakelib_selfcall": "3.1.0",
}
# where a row's path ends (its Tips column: the path, then what to do): the last
# "<package>/<module>.py:<line>" it names
PATH_END = re.compile(r"([\w./]+\.py):(\d+)")


def test_the_fake_libraries_are_no_library_the_table_knows() -> None:
    """(A name of rules/libraries.json would get the table's curated row too.)"""
    table = (ROOT / "rules" / "libraries.json").read_text("utf-8")
    found = sorted(p.name for p in SITE.iterdir() if p.is_dir() and "." not in p.name)
    assert found == sorted(VERSIONS)
    assert not [name for name in found if re.search(rf"\b{name}\b", table)]
    assert "fakelib" not in table


def line_of(path: Path, text: str) -> int:
    """The one line of ``path`` holding ``text`` (1-based)."""
    found = [n for n, line in enumerate(path.read_text("utf-8").splitlines(), 1) if text in line]
    assert len(found) == 1, (path, text, found)
    return found[0]


def tree_digest(root: Path) -> dict[str, str]:
    """Every entry under ``root``: a file's SHA-256, a folder's name."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return out


def migrate(out: Path, *more: str) -> Path:
    proc = tool("-q", "-i", str(PROJECT), "-o", str(out), *more)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out / "project_msft"


def read_rows(msft: Path) -> list[dict[str, str]]:
    with (msft / "unsupported_op.csv").open(encoding="utf-8-sig", newline="") as fh:
        return list(csv.DictReader(fh))


def deps_rows(msft: Path) -> list[dict[str, str]]:
    return [r for r in read_rows(msft) if r["Rule"] in DEPS_RULES]


def path_end(row: dict[str, str]) -> str:
    """``pkg/module.py:LINE``: where the row's path down into the library ends."""
    found = PATH_END.findall(row["Tips"])
    assert found, row
    return f"{found[-1][0]}:{found[-1][1]}"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], dict[str, str]]:
    """One run with --deps; the digests of the project and of site-packages taken before it."""
    before = tree_digest(PROJECT), tree_digest(SITE)
    msft = migrate(tmp_path_factory.mktemp("deps"), "--deps", str(SITE), "--no-cache")
    return msft, *before


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_case_is_one_row_with_its_rule_api_and_library_line(name: str, run) -> None:
    case, msft = CASES[name], run[0]
    line = line_of(msft / case.file, case.call)  # (lines of the output)
    rows = [r for r in deps_rows(msft) if r["File"] == case.file and r["OP"] == case.api]
    assert [(r["Rule"], int(r["Start Line"])) for r in rows] == [(case.rule, line)], rows
    assert rows[0]["Category"] == "third_party" and rows[0]["Action"] == "manual"
    library_line = line_of(SITE / case.library_file, case.cuda_line)
    assert path_end(rows[0]) == f"{case.library_file}:{library_line}"


def test_the_rows_of_the_run_and_the_clean_library(run) -> None:
    """One row per file, library and API: loop.py's two calls of move fold into one; the
    clean library, analysed (its version in the log), has none; no other rows."""
    msft = run[0]
    found = sorted((r["File"], r["OP"], r["Rule"]) for r in deps_rows(msft))
    expected = {(c.file, c.api, c.rule) for c in CASES.values()} | LOOP_ROWS
    assert found == sorted(expected)
    assert len(read_rows(msft)) == len(found)
    assert not [r for r in read_rows(msft) if "fakelib_clean" in r["OP"]]
    log = (msft / "msFmkTranspltlog.txt").read_text("utf-8")
    for name, version in VERSIONS.items():
        assert f"{name} {version}" in log, name
    logged = re.findall(r"WARNING +\S+: \[(deps\.\w+)\]", log)  # (one log line per row)
    assert sorted(logged) == sorted(rule for _, _, rule in found)


def test_the_trees_read_are_unchanged_and_nothing_of_the_library_is_copied(run) -> None:
    msft, project_before, site_before = run
    assert tree_digest(PROJECT) == project_before
    assert tree_digest(SITE) == site_before  # (no __pycache__ either: nothing was imported)
    written = {p.relative_to(msft).as_posix() for p in msft.rglob("*")}
    assert written == set(project_before) | REPORTS | {"change_list.csv", "advice.csv"}


def test_without_deps_the_outputs_differ_only_by_the_deps_rows(run, tmp_path: Path) -> None:
    msft = run[0]
    plain = migrate(tmp_path / "plain", "--no-cache")
    assert {p.name for p in plain.iterdir()} == {p.name for p in msft.iterdir()}
    for path in sorted(plain.iterdir()):
        if path.name not in REPORTS:  # the migrated files, change_list.csv, advice.csv
            assert comparable(path) == comparable(msft / path.name), path.name
    assert deps_rows(plain) == []
    assert read_rows(plain) == [r for r in read_rows(msft) if r["Rule"] not in DEPS_RULES]
    log = (plain / "msFmkTranspltlog.txt").read_text("utf-8")
    assert "--deps" not in log and "fakelib" not in log


def test_the_second_run_reads_the_cache_and_a_corrupt_cache_is_a_miss(run, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = migrate(tmp_path / "1", "--deps", str(SITE), "--cache-dir", str(cache))
    second = migrate(tmp_path / "2", "--deps", str(SITE), "--cache-dir", str(cache))
    assert read_rows(first) == read_rows(second) == read_rows(run[0])
    analysed = [ln for ln in _log(first) if "--deps: fakelib" in ln]
    cached = [ln for ln in _log(second) if "--deps: fakelib" in ln]
    assert len(analysed) == len(cached) == len(VERSIONS)
    assert not [ln for ln in analysed if "from the cache" in ln]
    assert all("from the cache" in ln for ln in cached), cached
    entries = [p for p in cache.rglob("*") if p.is_file()]
    assert entries
    for path in entries:
        path.write_bytes(b"\x00garbage{not json")
    third = migrate(tmp_path / "3", "--deps", str(SITE), "--cache-dir", str(cache))
    assert read_rows(third) == read_rows(first)
    again = [ln for ln in _log(third) if "--deps: fakelib" in ln]
    assert len(again) == len(VERSIONS) and not [ln for ln in again if "from the cache" in ln]


def _log(msft: Path) -> list[str]:
    return (msft / "msFmkTranspltlog.txt").read_text("utf-8").splitlines()


def test_a_deps_folder_that_does_not_exist_is_one_line_and_nothing_written(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "does" / "not" / "exist"
    proc = tool("-q", "-i", str(PROJECT), "-o", str(tmp_path / "out"), "--deps", str(missing))
    assert proc.returncode == 2
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    assert len(lines) == 1 and str(missing) in lines[0], lines
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# -- executed: the migrated project under the CPU stand-in for torch_npu, with real CPU torch


FRAME = re.compile(r'^  File "([^"]+)", line (\d+), in ', re.M)


def execute(msft: Path, argv: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    """The migrated project's script with the stand-in and the fake libraries on PYTHONPATH
    (real CPU torch: no CUDA)."""
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env.update(PYTHONPATH=f"{STANDIN}{os.pathsep}{SITE}", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(
        [sys.executable, *argv], cwd=msft, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def executable(run, tmp_path_factory: pytest.TempPathFactory) -> Path:
    need_module("torch", "torch is not installed")
    copy = tmp_path_factory.mktemp("executed") / "project_msft"
    shutil.copytree(run[0], copy)
    return copy


@pytest.mark.execution
@pytest.mark.parametrize("name", sorted(n for n in CASES if CASES[n].rule == CUDA))
def test_a_flagged_path_really_fails_in_the_library_at_the_line_named(
    name: str, run, executable: Path
) -> None:
    case = CASES[name]
    proc = execute(executable, case.runs)
    assert proc.returncode != 0, proc.stdout
    assert "torch_npu" in (executable / "train.py").read_text("utf-8")  # (the migrated one)
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith(("AssertionError: Torch not compiled with CUDA", "AttributeError")), (
        proc.stderr[-2000:]
    )
    site = f"{SITE.resolve()}/"
    frames = [(f, int(n)) for f, n in FRAME.findall(proc.stderr) if f.startswith(site)]
    assert frames, proc.stderr[-2000:]
    innermost = f"{frames[-1][0][len(site) :]}:{frames[-1][1]}"
    line = str(line_of(run[0] / case.file, case.call))
    rows = [r for r in deps_rows(run[0]) if r["File"] == case.file and r["Start Line"] == line]
    assert [path_end(r) for r in rows] == [innermost]


@pytest.mark.execution
def test_the_cpu_path_and_the_clean_library_run_without_cuda(executable: Path) -> None:
    for argv in (CASES["guarded"].runs, ("train.py", "clean")):
        proc = execute(executable, argv)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout.startswith("tensor("), proc.stdout
    original = execute(PROJECT, CASES["guarded"].runs)  # the un-migrated project: its own .cuda()
    assert original.returncode != 0 and "CUDA" in original.stderr
