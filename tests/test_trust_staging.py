"""Issue 27, "trust nothing it reads": the output never replaces anything by accident, nothing
is written outside it, and --inplace is honest.

Two runs into the same output (the race made deterministic: the other run finishes between
this run's build and its move into place); --overwrite over a link; a shard part whose records
lead outside the output or are malformed; names too long for the file system; --inplace on a
link, a hard-linked file, a read-only file, and interrupted by SIGINT/SIGTERM."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.run import staging

CUDA = b"import torch\nx = torch.ones(1).cuda()\n"
MIGRATED = b".npu()"


def project(folder: Path, files: int = 2) -> Path:
    folder.mkdir(parents=True)
    for i in range(files):
        (folder / f"m{i}.py").write_bytes(CUDA)
    return folder


def migrate(src: Path, out: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["-q", "-i", str(src), "-o", str(out), *extra])
    return result.exit_code, result.output


def tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", "-q", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every path under ``root`` (links not followed), its kind and its content."""
    out: dict[str, tuple[int, bytes]] = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = Path(folder) / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                content = os.readlink(path).encode()
            elif stat.S_ISREG(mode):
                content = path.read_bytes()
            else:
                content = b""
            out[path.relative_to(root).as_posix()] = (stat.S_IFMT(mode), content)
    return out


# -- two runs into the same output -----------------------------------------------------------
def _other_run_finishes_first(monkeypatch: pytest.MonkeyPatch, src: Path, out: Path) -> list:
    """Right before this run moves its output into place, another (real) run of the same
    command completes: the moment a race between two runs can hit."""
    seen: list[Any] = []
    real = staging._move_into_place

    def late(staging_dir: Path, final_dir: Path, result: Any) -> None:
        other = tool("-i", str(src), "-o", str(out), "--no-cache")
        seen.append((other.returncode, other.stderr, final_dir.stat().st_ino, snapshot(final_dir)))
        real(staging_dir, final_dir, result)

    monkeypatch.setattr(staging, "_move_into_place", late)
    return seen


def test_a_run_never_replaces_an_output_that_appeared_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, out = project(tmp_path / "p"), tmp_path / "out"
    seen = _other_run_finishes_first(monkeypatch, src, out)
    code, text = migrate(src, out, "--no-cache")
    (other_code, other_err, inode, other_tree) = seen[0]
    assert other_code == 0, other_err
    final = out / "p_msft"
    assert code == 2, text
    assert text == (
        f"ms_fmk_transplt: error: {final}: appeared while this run was writing it; "
        "nothing was written\n"
    )
    # the other run's output is intact, this run left nothing (no staging folder, no log)
    assert final.stat().st_ino == inode
    assert snapshot(final) == other_tree
    assert sorted(p.name for p in out.iterdir()) == ["p_msft"]


def test_with_overwrite_the_output_that_appeared_meanwhile_is_replaced_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, out = project(tmp_path / "p"), tmp_path / "out"
    seen = _other_run_finishes_first(monkeypatch, src, out)
    code, text = migrate(src, out, "--no-cache", "--overwrite")
    assert code == 0, text
    inode, other_tree = seen[0][2], seen[0][3]
    final = out / "p_msft"
    assert final.stat().st_ino != inode  # this run's folder, not a mix of both
    assert sorted(snapshot(final)) == sorted(other_tree)
    assert sorted(p.name for p in out.iterdir()) == ["p_msft"]  # no .old-*, no staging


def test_a_run_into_a_zoo_output_that_appeared_meanwhile_lists_the_model_as_not_migrated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    zoo, out = tmp_path / "zoo", tmp_path / "out"
    project(zoo / "p")
    seen = _other_run_finishes_first(monkeypatch, zoo / "p", out)
    result = CliRunner().invoke(main, ["-q", "--zoo", "-i", str(zoo), "-o", str(out)])
    assert result.exit_code == 1, result.output  # a model failed; the other run's is kept
    assert snapshot(out / "p_msft") == seen[0][3]
    rows = (out / "zoo_zoo_summary.csv").read_text(encoding="utf-8")
    assert "not migrated: appeared while this run was writing it; nothing was written" in rows


@pytest.mark.parametrize("native", [True, False], ids=["renameat2", "mkdir-claim"])
def test_rename_no_replace_never_replaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool
) -> None:
    from ms_fmk_transplt.safety import fs_safety

    if not native:  # the fallback where renameat2 is missing (old kernel/libc, other OS)
        monkeypatch.setattr(fs_safety, "_renameat2", lambda src, dst: False)
    src = tmp_path / "staging"
    src.mkdir()
    (src / "a").write_text("new")
    taken = {"dir": tmp_path / "d", "file": tmp_path / "f", "dangling": tmp_path / "l"}
    taken["dir"].mkdir()
    (taken["dir"] / "a").write_text("old")
    taken["file"].write_text("old")
    os.symlink("nowhere", taken["dangling"])
    (tmp_path / "empty").mkdir()
    taken["empty dir"] = tmp_path / "empty"
    before = snapshot(tmp_path)
    for what, dst in taken.items():
        with pytest.raises(FileExistsError):
            fs_safety.rename_no_replace(src, dst)
        assert snapshot(tmp_path) == before, what
    fs_safety.rename_no_replace(src, tmp_path / "free")
    assert (tmp_path / "free" / "a").read_text() == "new" and not src.exists()


# -- --overwrite and links -------------------------------------------------------------------
def test_overwrite_over_a_linked_output_replaces_the_link_only(tmp_path: Path) -> None:
    src, out = project(tmp_path / "p"), tmp_path / "out"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    out.mkdir()
    os.symlink(elsewhere, out / "p_msft")
    code, text = migrate(src, out, "--overwrite")
    assert code == 0, text
    assert not (out / "p_msft").is_symlink() and MIGRATED in (out / "p_msft/m0.py").read_bytes()
    assert sorted(p.name for p in out.iterdir()) == ["p_msft"]  # no .p_msft.old-<pid> link
    assert snapshot(elsewhere) == {"keep.txt": (stat.S_IFREG, b"mine")}


def test_a_set_aside_link_left_by_a_killed_run_is_removed_not_followed(tmp_path: Path) -> None:
    src, out = project(tmp_path / "p"), tmp_path / "out"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out.mkdir()
    os.symlink(elsewhere, out / f".p_msft.old-{dead.pid}")
    code, text = migrate(src, out)
    assert code == 0, text
    assert sorted(p.name for p in out.iterdir()) == ["p_msft"]
    assert snapshot(elsewhere) == {"keep.txt": (stat.S_IFREG, b"mine")}


# -- names too long for the file system ------------------------------------------------------
def test_a_246_character_folder_name_is_migrated(tmp_path: Path) -> None:
    name = "n" * 246  # <name>_msft is 251 bytes: fits; its staging folder would not
    src, out = project(tmp_path / name), tmp_path / "out"
    code, text = migrate(src, out)
    assert code == 0, text
    assert sorted(p.name for p in out.iterdir()) == [f"{name}_msft"]
    assert MIGRATED in (out / f"{name}_msft" / "m0.py").read_bytes()


def test_an_output_folder_name_over_255_bytes_is_refused(tmp_path: Path) -> None:
    name = "é" * 126  # 252 bytes; <name>_msft 257
    src, out = project(tmp_path / name), tmp_path / "out"
    code, text = migrate(src, out)
    final = out / f"{name}_msft"
    assert code == 2, text
    assert text == (
        f"ms_fmk_transplt: error: {final}: the output folder name would be 257 bytes, "
        "longer than file systems allow (255)\n"
    )
    assert not out.exists()


def test_a_long_named_run_that_stops_writes_its_log_under_a_shorter_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ms_fmk_transplt.report import unsupported_op

    def broken(*_args: object) -> None:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(unsupported_op, "write_xlsx", broken)
    name = "n" * 246
    src, out = project(tmp_path / name), tmp_path / "out"
    code, text = migrate(src, out)
    assert code == 3, text
    (log,) = out.iterdir()  # only the log: no staging folder, no output
    assert log.name.endswith(".interrupted.log") and len(log.name) <= 255
    assert log.name.startswith("n" * 200) and f"(traceback in {log})" in text
    monkeypatch.undo()
    code, text = migrate(src, out)  # the next run finds and removes that log
    assert code == 0, text
    assert sorted(p.name for p in out.iterdir()) == [f"{name}_msft"]


# -- --merge-shards: parts are read, never trusted -------------------------------------------
@pytest.fixture(scope="module")
def parts_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("parts")
    src = project(base / "p", files=6)
    for i in (1, 2):
        code, text = migrate(src, base / "out", "--no-cache", "--shard", f"{i}/2")
        assert code == 0, text
    return base


@pytest.fixture
def parts(parts_template: Path, tmp_path: Path) -> Path:
    shutil.copytree(parts_template, tmp_path / "t", symlinks=True)
    return tmp_path / "t"


def _records(base: Path, i: int) -> tuple[Path, dict[str, Any]]:
    path = base / "out" / f"p_msft.shard-{i}-of-2" / "msft_shard.json"
    return path, json.loads(path.read_text(encoding="utf-8"))


def _merge_refused(base: Path, *needles: str) -> str:
    """The merge stops with exit 2 and one line, writes nothing anywhere (outside the output
    included) and keeps the parts."""
    before = snapshot(base)
    code, text = migrate(base / "p", base / "out", "--merge-shards", "2")
    assert code == 2, text
    assert text.startswith("ms_fmk_transplt: error: ") and text.count("\n") == 1, text
    for needle in needles:
        assert needle in text, text
    assert snapshot(base) == before
    return text


def test_the_issue_path_through_a_link_and_up_is_refused(parts: Path) -> None:
    (parts / "victim").mkdir()
    path, data = _records(parts, 1)
    os.symlink(parts / "victim", path.parent / "lnk")
    data["files"][0]["path"] = "lnk/../../../X"
    path.write_text(json.dumps(data), encoding="utf-8")
    _merge_refused(parts, str(path.parent), "'lnk/../../../X'")


@pytest.mark.parametrize(
    "bad",
    ["/tmp/abs.py", "../up.py", "a/../../up.py", "./m.py", "a//b.py", "a\\..\\b.py", "a\0b", ""],
)
def test_a_path_that_is_not_plainly_inside_the_output_is_refused(parts: Path, bad: str) -> None:
    path, data = _records(parts, 1)
    data["files"][0]["path"] = bad
    path.write_text(json.dumps(data), encoding="utf-8")
    _merge_refused(parts, str(path.parent), repr(bad))


def test_a_linked_folder_inside_a_part_is_not_read_through(parts: Path) -> None:
    secret = parts / "secret"
    secret.mkdir()
    (secret / "key.py").write_text("SECRET")
    path, data = _records(parts, 1)
    os.symlink(secret, path.parent / "lnk")
    data["files"][0]["path"] = "lnk/key.py"
    path.write_text(json.dumps(data), encoding="utf-8")
    _merge_refused(parts, str(path.parent / "lnk/key.py"), "link")


def test_a_link_of_one_part_is_not_a_way_out_for_another(parts: Path) -> None:
    """Part 1 holds the link ``lnk`` -> a folder outside; part 2 a real ``lnk/evil.py``: the
    merge would create the link first, then write through it."""
    outside = parts / "outside"
    outside.mkdir()
    path1, data1 = _records(parts, 1)
    path2, data2 = _records(parts, 2)
    os.symlink(outside, path1.parent / "lnk")
    (path2.parent / "lnk").mkdir()
    (path2.parent / "lnk" / "evil.py").write_text("x = 1\n")
    data1["files"][0]["path"] = "lnk"
    data2["files"][0]["path"] = "lnk/evil.py"
    path1.write_text(json.dumps(data1), encoding="utf-8")
    path2.write_text(json.dumps(data2), encoding="utf-8")
    _merge_refused(parts, "lnk/evil.py", "link")
    assert not list(outside.iterdir())


def _set(data: dict[str, Any], keys: tuple[Any, ...], value: Any) -> None:
    for key in keys[:-1]:
        data = data[key]
    data[keys[-1]] = value


@pytest.mark.parametrize(
    ("keys", "value"),
    [
        (("files",), {"a": 1}),
        (("files", 0), "m0.py"),
        (("files", 0, "path"), 7),
        (("files", 0, "index"), "1"),
        (("files", 0, "status"), "exploded"),
        (("files", 0, "time"), "yesterday"),
        (("files", 0, "events"), [{"file": "m0.py"}]),
        (("files", 0, "events"), [{"nonsense": 1}]),
        (("files", 0, "notices"), [7]),
        (("notes",), [["LOUD", "x"]]),
        (("notes",), [[[], "x"]]),
        (("started",), None),
        (("fingerprint",), ["x"]),
    ],
)
def test_malformed_records_of_a_part_are_one_line(parts: Path, keys: tuple, value: Any) -> None:
    path, data = _records(parts, 1)
    _set(data, keys, value)
    path.write_text(json.dumps(data), encoding="utf-8")
    _merge_refused(parts, str(path), "malformed records of this part")


def test_an_event_of_the_wrong_type_is_one_line(parts: Path) -> None:
    path, data = _records(parts, 1)
    item = next(f for f in data["files"] if f["events"])
    item["events"][0][1] = "three"  # (an event is its fields in order: file, start_line, ...)
    path.write_text(json.dumps(data), encoding="utf-8")
    _merge_refused(parts, str(path), "'start_line' of a ChangeEvent is not int")


def test_records_nested_too_deeply_are_one_line(parts: Path) -> None:
    path, _ = _records(parts, 1)
    path.write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")
    _merge_refused(parts, str(path), "nested too deeply")


# -- --inplace -------------------------------------------------------------------------------
def inplace(*paths: Path) -> subprocess.CompletedProcess[str]:
    return tool("--inplace", *map(str, paths))


def test_inplace_leaves_a_link_as_a_link(tmp_path: Path) -> None:
    (tmp_path / "real.py").write_bytes(CUDA)
    os.symlink("real.py", tmp_path / "link.py")
    done = inplace(tmp_path / "link.py")  # only the link: reported, its target untouched
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[0] == (
        f"ms_fmk_transplt: warning: {tmp_path / 'link.py'}: not rewritten: a symbolic link, "
        "not followed (give the file it points to)"
    )
    assert os.readlink(tmp_path / "link.py") == "real.py"
    assert (tmp_path / "real.py").read_bytes() == CUDA
    done = inplace(tmp_path / "real.py")  # the file itself is migrated, the link still leads to it
    assert done.returncode == 0, done.stderr
    assert os.readlink(tmp_path / "link.py") == "real.py"
    assert MIGRATED in (tmp_path / "real.py").read_bytes()


def test_inplace_keeps_hard_links_one_file(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(CUDA)
    os.link(tmp_path / "a.py", tmp_path / "b.py")
    (tmp_path / "a.py").chmod(0o640)
    done = inplace(tmp_path / "a.py")
    assert done.returncode == 0, done.stderr
    a, b = (tmp_path / "a.py").stat(), (tmp_path / "b.py").stat()
    assert a.st_ino == b.st_ino and a.st_nlink == 2 and stat.S_IMODE(a.st_mode) == 0o640
    assert MIGRATED in (tmp_path / "b.py").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py", "b.py"]  # no temporary left


def test_inplace_leaves_a_read_only_file_and_says_so(tmp_path: Path) -> None:
    """Checked on the mode bits: as root, os.access says any file is writable."""
    (tmp_path / "ro.py").write_bytes(CUDA)
    (tmp_path / "ok.py").write_bytes(CUDA)
    (tmp_path / "ro.py").chmod(0o444)
    done = inplace(tmp_path)
    assert done.returncode == 1, done.stderr
    assert (
        f"ms_fmk_transplt: warning: {tmp_path / 'ro.py'}: not rewritten: read-only (give it "
        "write permission to migrate it)"
    ) in done.stderr.splitlines()
    assert (tmp_path / "ro.py").read_bytes() == CUDA
    assert stat.S_IMODE((tmp_path / "ro.py").stat().st_mode) == 0o444
    assert MIGRATED in (tmp_path / "ok.py").read_bytes()  # the others are migrated


SIGNALS = [(signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM")]


@pytest.mark.parametrize(("sig", "name"), SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_interrupted_inplace_exits_130_and_leaves_no_file_half_written(
    tmp_path: Path, sig: int, name: str
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    count = 3000
    for i in range(count):
        (tree / f"f{i:04}.py").write_bytes(CUDA + b"y = %d\n" % i * 40)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ms_fmk_transplt", "--inplace", str(tree)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    for _ in range(20):  # one "migrated <file>" line per file rewritten: well into the run
        assert proc.stdout.readline().startswith(b"migrated ")
    time.sleep(0.05)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert stderr.decode() == (
        f"ms_fmk_transplt: interrupted by {name}: the files rewritten before it are migrated, "
        "the others are unchanged (none is half-written)\n"
    )
    old = new = 0
    for i in range(count):
        data = (tree / f"f{i:04}.py").read_bytes()
        before = CUDA + b"y = %d\n" % i * 40
        if data == before:
            old += 1
        else:  # complete: every line of the original there, migrated
            assert MIGRATED in data and data.endswith(b"y = %d\n" % i * 40), i
            assert data.count(b"y = %d\n" % i) == 40, i
            new += 1
    assert new >= 20 and old > 0, (new, old)
    assert sorted(p.name for p in tree.iterdir()) == [f"f{i:04}.py" for i in range(count)]


@pytest.mark.parametrize("links", [1, 2], ids=["one name", "hard-linked"])
def test_a_signal_during_a_write_waits_for_the_write_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, links: int
) -> None:
    from ms_fmk_transplt.commands import inplace_write

    path = tmp_path / "a.py"
    path.write_bytes(b"old\n")
    if links == 2:
        os.link(path, tmp_path / "b.py")
    real = inplace_write._temporary

    def signalled(target: Path, data: bytes) -> str:
        os.kill(os.getpid(), signal.SIGTERM)  # arrives in the middle of the write
        return real(target, data)

    monkeypatch.setattr(inplace_write, "_temporary", signalled)
    with pytest.raises(SystemExit) as stop:
        with inplace_write.stopped_by_signals("inplace"):
            inplace_write.write(path, b"new\n" * 1000, b"old\n")
    assert stop.value.code == 130
    assert path.read_bytes() == b"new\n" * 1000 and path.stat().st_nlink == links
    assert len(list(tmp_path.iterdir())) == links  # no temporary file left
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers restored


# -- --zoo: the summary's names and parts ----------------------------------------------------
def test_a_zoo_whose_summary_name_is_too_long_is_refused(tmp_path: Path) -> None:
    zoo, out = tmp_path / ("z" * 240), tmp_path / "out"
    project(zoo / "m")
    result = CliRunner().invoke(main, ["-q", "--zoo", "-i", str(zoo), "-o", str(out)])
    summary = out / f"{zoo.name}_zoo_summary.xlsx"
    assert result.exit_code == 2, result.output
    assert result.output == (
        f"ms_fmk_transplt: error: {summary}: the summary file name would be 257 bytes, "
        "longer than file systems allow (255)\n"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "content",
    ["[" * 100_000, '{"rows": 3}', '{"rows": [["m", 1]]}', '{"rows": [[1,2,3,4,5,6,7,8,9,10,11]]}'],
)
def test_a_malformed_zoo_summary_part_is_one_line(tmp_path: Path, content: str) -> None:
    zoo, out = tmp_path / "zoo", tmp_path / "out"
    project(zoo / "m")
    out.mkdir()
    part = out / "zoo_zoo_summary.shard-1-of-1.json"
    part.write_text(content, encoding="utf-8")
    result = CliRunner().invoke(
        main, ["-q", "--zoo", "-i", str(zoo), "-o", str(out), "--merge-shards", "1"]
    )
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"ms_fmk_transplt: error: {part}: ")
    assert result.output.count("\n") == 1
    assert sorted(p.name for p in out.iterdir()) == [part.name]
