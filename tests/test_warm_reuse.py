"""A re-run into an existing ``<name>_msft`` (issue 50) keeps what is already there: an output
file whose bytes and metadata are what the run writes is hard-linked from the previous tree
(run/previous_tree.py), the workbook and report.html of the same records come from the cache
(report/report_cache.py). The tree it leaves is the tree a cold run leaves, byte for byte with
modes and times; it never links an input file, a file that something else also names, a file
changed since, or a file reached through a link; Ctrl-C leaves the previous output as it was."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_fmk_transplt.catalogue.rule_pages import page as real_page
from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.report import html_report, unsupported_op
from ms_fmk_transplt.report.report_cache import WHEN, ReportCache
from ms_fmk_transplt.scan.cache import Cache

CUDA = b"import torch\nx = torch.ones(1).cuda()\ntorch.cuda.synchronize()\n"
CLEAN = b"def add(a, b):\n    return a + b\n"

REPORTS = ("change_list.csv", "unsupported_op.csv", "advice.csv")
pytestmark = pytest.mark.skipif(not hasattr(os, "link"), reason="no hard links")


def project(root: Path) -> Path:
    src = root / "proj"
    (src / "pkg" / "deep").mkdir(parents=True)
    (src / "train.py").write_bytes(CUDA)
    (src / "util.py").write_bytes(CLEAN)
    (src / "pkg" / "__init__.py").write_bytes(b"")
    (src / "pkg" / "deep" / "model.py").write_bytes(CUDA + b"y = 2\n")
    (src / "pkg" / "deep" / "other.py").write_bytes(CLEAN + b"z = 3\n")
    (src / "run.sh").write_bytes(b"#!/bin/sh\npython train.py\n")
    (src / "run.sh").chmod(0o755)
    (src / "data.bin").write_bytes(bytes(range(256)) * 64)
    (src / "notes.txt").write_bytes(b"notes\n")
    os.symlink("util.py", src / "alias.py")
    return src


def migrate(src: Path, out: Path, cache: Path | None, *extra: str) -> None:
    where = ["--cache-dir", str(cache)] if cache else ["--no-cache"]
    args = ["-q", "-i", str(src), "-o", str(out), "--overwrite", "-j", "1", *where, *extra]
    # (a later -j wins)
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output


def files(folder: Path) -> dict[str, os.stat_result]:
    return {
        p.relative_to(folder).as_posix(): p.lstat()
        for p in sorted(folder.rglob("*"))
        if p.is_file() or p.is_symlink()
    }


def snapshot(folder: Path) -> dict[str, tuple[object, ...]]:
    """Every file's kind, bytes (a link: its target), mode bits and modification time; the
    log (times) and the workbook (its creation time) as their comparable parts."""
    out: dict[str, tuple[object, ...]] = {}
    for rel, info in files(folder).items():
        path = folder / rel
        if stat.S_ISLNK(info.st_mode):
            out[rel] = ("link", os.readlink(path))
        elif rel.endswith("msFmkTranspltlog.txt"):
            out[rel] = ("log",)
        elif rel.endswith(".xlsx"):
            with zipfile.ZipFile(path) as book:
                parts = {n: book.read(n) for n in book.namelist() if n != "docProps/core.xml"}
            out[rel] = ("xlsx", parts, stat.S_IMODE(info.st_mode))
        elif rel == "report.html":  # without the minute it was written at
            out[rel] = ("page", WHEN.sub(b"T", path.read_bytes()), stat.S_IMODE(info.st_mode))
        else:  # the reports are written now: their times are not the input's
            when = None if rel in REPORTS else info.st_mtime_ns
            out[rel] = ("file", path.read_bytes(), stat.S_IMODE(info.st_mode), when)
    return out


def inodes(folder: Path) -> dict[str, int]:
    return {rel: info.st_ino for rel, info in files(folder).items()}


def test_a_warm_rerun_keeps_the_unchanged_files_and_equals_a_cold_run(tmp_path: Path) -> None:
    src = project(tmp_path)
    out, cold_out, cache = tmp_path / "out", tmp_path / "cold", tmp_path / "cache"
    migrate(src, out, cache)
    tree = out / "proj_msft"
    before = inodes(tree)
    # what changes for the re-run: a file's text, a file's time only, a file's mode only
    (src / "train.py").write_bytes(CUDA + b"w = 1\n")
    touched = src / "pkg" / "deep" / "other.py"
    os.utime(touched, ns=(touched.stat().st_atime_ns, touched.stat().st_mtime_ns + 10**9))
    (src / "notes.txt").chmod(0o600)
    migrate(src, out, cache)
    migrate(src, cold_out, None)
    assert snapshot(tree) == snapshot(cold_out / "proj_msft")
    after = inodes(tree)
    kept = {rel for rel in after if before.get(rel) == after[rel]}
    assert kept == {"util.py", "pkg/__init__.py", "pkg/deep/model.py", "run.sh", "data.bin"}
    for rel, info in files(tree).items():  # nothing in the new tree shares a file
        assert stat.S_ISLNK(info.st_mode) or info.st_nlink == 1, rel
    for rel, info in files(src).items():  # the input was never linked
        assert stat.S_ISLNK(info.st_mode) or info.st_nlink == 1, rel


def test_a_changed_shared_or_linked_previous_file_is_written_again(tmp_path: Path) -> None:
    src = project(tmp_path)
    out, cache = tmp_path / "out", tmp_path / "cache"
    migrate(src, out, cache)
    tree = out / "proj_msft"
    # util.py edited in the output with its time put back: same size and time, other bytes
    edited = tree / "util.py"
    info = edited.stat()
    edited.write_bytes(CLEAN.replace(b"a + b", b"b + a"))
    os.utime(edited, ns=(info.st_atime_ns, info.st_mtime_ns))
    # run.sh also named elsewhere: keeping it would make the new tree share it
    outside = tmp_path / "elsewhere.sh"
    os.link(tree / "run.sh", outside)
    # pkg/deep a link to a copy of it elsewhere: never followed
    copy = tmp_path / "deep_copy"
    shutil.copytree(tree / "pkg" / "deep", copy, copy_function=shutil.copy2)
    shutil.rmtree(tree / "pkg" / "deep")
    os.symlink(copy, tree / "pkg" / "deep")
    shared = outside.stat().st_ino
    migrate(src, out, cache)
    assert (tree / "util.py").read_bytes() == CLEAN
    assert (tree / "run.sh").stat().st_ino != shared
    assert outside.read_bytes() == (src / "run.sh").read_bytes()
    assert not (tree / "pkg" / "deep").is_symlink()
    for name in ("model.py", "other.py"):
        assert (tree / "pkg" / "deep" / name).stat().st_ino != (copy / name).stat().st_ino
        assert (copy / name).stat().st_nlink == 1
    migrate(src, tmp_path / "cold", None)
    assert snapshot(tree) == snapshot(tmp_path / "cold" / "proj_msft")


def test_the_workbook_and_page_of_the_same_records_come_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = project(tmp_path)
    out, cache = tmp_path / "out", tmp_path / "cache"
    migrate(src, tmp_path / "first", cache)  # where the output goes is no part of the key
    migrate(src, out, cache)
    tree = out / "proj_msft"
    first = (tree / "unsupported_op.xlsx").read_bytes(), (tree / "report.html").read_bytes()

    def built(*args: object) -> None:
        raise AssertionError("built again")

    monkeypatch.setattr(unsupported_op, "write_xlsx", built)
    monkeypatch.setattr(html_report, "_page", built)
    migrate(src, out, cache)
    assert (tree / "unsupported_op.xlsx").read_bytes() == first[0]
    page = (tree / "report.html").read_bytes()  # only the minute it was written at may differ
    assert WHEN.sub(b"T", page) == WHEN.sub(b"T", first[1]) and WHEN.search(page)
    monkeypatch.undo()
    # a rule page the page holds changed (docs/rules is no part of the cache's fingerprint)
    monkeypatch.setattr(html_report, "page", lambda rule: f"{real_page(rule)}\nNEW-PAGE-TEXT")
    migrate(src, out, cache)
    assert b"NEW-PAGE-TEXT" in (tree / "report.html").read_bytes()
    monkeypatch.undo()
    # records that differ (one more change): both built again, and right
    (src / "util.py").write_bytes(CLEAN + b"torch.cuda.empty_cache()\n")
    migrate(src, out, cache)
    assert (
        b"util.py"
        in (tree / "unsupported_op.csv").read_bytes() + (tree / "change_list.csv").read_bytes()
    )
    assert b"empty_cache" in (tree / "report.html").read_bytes()


def test_a_damaged_report_entry_is_a_miss(tmp_path: Path) -> None:
    cache = ReportCache(Cache(tmp_path, "f" * 64), "d" * 64)
    page = b'<div class="run">x \xc2\xb7 2026-01-02 03:04 \xc2\xb7 options: none</div>'
    at = page.index(b"2026")
    cache.put_page("report.html", page, b"k", at)
    assert cache.get_page("report.html", b"k", b"2027-05-06 07:08") == page.replace(
        b"2026-01-02 03:04", b"2027-05-06 07:08"
    )
    assert cache.get_page("report.html", b"other", b"2027-05-06 07:08") is None
    for bad in (at + 1, -1, len(page), "3"):  # an offset that is not the time: a miss
        cache.cache.put(
            cache._key("report.html", b"k"), {"report": "report.html", "when_at": bad}, page
        )
        assert cache.get_page("report.html", b"k", b"2027-05-06 07:08") is None
    cache.put("unsupported_op.xlsx", b"PK", b"n")
    assert cache.get("unsupported_op.xlsx", b"n") == b"PK"
    assert cache.get("report.html", b"n") is None  # another report's key
    cache.cache.put(cache._key("unsupported_op.xlsx", b"n"), {"report": "x"}, b"PK")
    assert cache.get("unsupported_op.xlsx", b"n") is None


def test_ctrl_c_during_a_warm_run_leaves_the_previous_output_intact(tmp_path: Path) -> None:
    src = tmp_path / "big"
    for i in range(1500):
        folder = src / f"d{i % 30:02}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:04}.py").write_bytes(CUDA + b"y = %d\n" % i * 20)
    out, cache = tmp_path / "out", tmp_path / "cache"
    migrate(src, out, cache, "-j", "2")
    tree = out / "big_msft"
    before = {rel: (info.st_ino, (tree / rel).read_bytes()) for rel, info in files(tree).items()}
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    args = [
        "-q",
        "-i",
        str(src),
        "-o",
        str(out),
        "--overwrite",
        "-j",
        "1",
        "--cache-dir",
        str(cache),
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ms_fmk_transplt", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    staged = 0
    deadline = time.monotonic() + 60
    while staged < 100 and proc.poll() is None and time.monotonic() < deadline:
        partial = list(out.glob(".big_msft.partial-*"))
        staged = sum(1 for _ in partial[0].rglob("*.py")) if partial else 0
        time.sleep(0.002)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert not list(out.glob(".big_msft.*"))  # no staging folder left
    now = files(tree)
    assert now.keys() == before.keys()
    for rel, info in now.items():
        assert (info.st_ino, (tree / rel).read_bytes()) == before[rel], rel
        assert info.st_nlink == 1, rel


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the workbook forks on Linux")
def test_a_workbook_child_that_fails_is_built_again_by_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workbook is built in a forked child while the other reports are written; a child
    that fails (here: each time it starts) leaves no temporary file, and the run builds it."""
    src = project(tmp_path)
    real, parent = unsupported_op.write_xlsx, os.getpid()

    def failing_in_a_child(path: Path, *args: object) -> None:
        if os.getpid() != parent:
            (path.parent / f".{path.name}.{os.getpid()}.abcd1234.tmp").write_bytes(b"half")
            raise MemoryError
        real(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(unsupported_op, "write_xlsx", failing_in_a_child)
    migrate(src, tmp_path / "out", None, "-j", "2")  # (with -j 1 it is built in the run)
    monkeypatch.undo()
    migrate(src, tmp_path / "cold", None)
    tree = tmp_path / "out" / "proj_msft"
    assert not list(tree.glob(".*.tmp"))
    assert snapshot(tree) == snapshot(tmp_path / "cold" / "proj_msft")


def test_a_previous_file_of_another_group_or_other_attributes_is_written(tmp_path: Path) -> None:
    """What copystat gives a written file besides mode and times: the group a new file gets
    and the input's extended attributes; a previous file that differs there is not kept."""
    src = project(tmp_path)
    out, cache = tmp_path / "out", tmp_path / "cache"
    try:
        os.setxattr(src / "notes.txt", "user.origin", b"one")
    except (OSError, AttributeError):
        pytest.skip("no user extended attributes here")
    migrate(src, out, cache)
    tree = out / "proj_msft"
    assert os.getxattr(tree / "notes.txt", "user.origin") == b"one"
    groups = {*os.getgroups(), *([1] if os.geteuid() == 0 else [])}  # (root: any group)
    other = next((g for g in groups if g != (tree / "util.py").stat().st_gid), None)
    if other is None:
        pytest.skip("this user is in one group only")
    os.chown(tree / "util.py", -1, other)
    os.setxattr(tree / "run.sh", "user.origin", b"planted")
    os.setxattr(tree / "notes.txt", "user.origin", b"two")
    before = inodes(tree)
    migrate(src, out, cache)
    after = inodes(tree)
    assert before["pkg/__init__.py"] == after["pkg/__init__.py"]  # (reuse is on)
    assert before["data.bin"] == after["data.bin"]
    for rel in ("util.py", "run.sh", "notes.txt"):
        assert before[rel] != after[rel], rel
    migrate(src, tmp_path / "cold", None)
    assert snapshot(tree) == snapshot(tmp_path / "cold" / "proj_msft")
    cold = tmp_path / "cold" / "proj_msft"
    for rel in ("util.py", "run.sh", "notes.txt"):
        assert (tree / rel).stat().st_gid == (cold / rel).stat().st_gid
        assert os.listxattr(tree / rel) == os.listxattr(cold / rel)
    assert os.getxattr(tree / "notes.txt", "user.origin") == b"one"


def test_ctrl_c_while_the_run_waits_for_the_workbook_stops_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from ms_fmk_transplt.report import all_reports

    class Child:
        exitcode, pid = None, 4_000_000

        def __init__(self) -> None:
            self.calls: list[str] = []

        def join(self) -> None:
            self.calls.append("join")
            if self.calls.count("join") == 1:  # the signal lands while the run waits
                raise KeyboardInterrupt

        def terminate(self) -> None:
            self.calls.append("terminate")

    child = Child()
    monkeypatch.setattr(all_reports, "_forked", lambda *args: child)
    result = SimpleNamespace(options=SimpleNamespace(jobs=0))
    names = {"report.html": "report.html"}
    with pytest.raises(KeyboardInterrupt):
        with all_reports._workbook(tmp_path / "w.xlsx", result, names, None, True):  # type: ignore[arg-type]
            pass
    assert child.calls == ["join", "terminate", "join"]
