"""The result cache is data someone else may have written (a shared or CI-restored folder): no
entry can run code or break a run, an entry that is not exactly what this run would store is a
miss (the file is migrated again and the entry rewritten), and the cache folder never ends up
in the output nor inside a folder a run replaces."""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import pickle
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import comparable

import ms_fmk_transplt
from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.records import FileRecord, RunOptions
from ms_fmk_transplt.run.pipeline import run
from ms_fmk_transplt.scan import cache as cache_module

ROOT = Path(__file__).resolve().parent.parent

FILES = {
    "kernels.py": "import triton\n\n@triton.jit\ndef add_kernel(x):\n    pass\n",
    "model.py": (
        "import torch\nfrom kernels import add_kernel\n\n"
        "def f(x):\n    if x.is_cuda:\n        return add_kernel(x)\n    return x.cuda()\n"
    ),
    "train.py": "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\ntorch.cuda.synchronize()\n",
    "plain.py": "def add(a, b):\n    return a + b\n",
    "nb.ipynb": json.dumps(
        {
            "cells": [
                {"cell_type": "code", "metadata": {}, "source": ["x = x.cuda()\n"]},
                {"cell_type": "markdown", "metadata": {}, "source": ["text"]},
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    ),
    "data/notes.txt": "not code\n",
}
N_MIGRATED = 5  # the .py files and the notebook


def make_project(tmp_path: Path) -> Path:
    src = tmp_path / "proj"
    for rel, text in FILES.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text, encoding="utf-8")
    return src


def migrate(src: Path, out: Path, *extra: str) -> tuple[int, str]:
    args = ["-q", "-i", str(src), "-o", str(out), "-j", "1", "--overwrite", *extra]
    result = CliRunner().invoke(main, args)
    return result.exit_code, result.output


def tree(folder: Path) -> dict[str, bytes]:
    """Every file of an output (links as their target), but the log and the sheet (they hold
    times and the "from cache" count); report.html without the minute it was written at (two
    runs may fall in different minutes)."""
    return {
        p.relative_to(folder).as_posix(): (
            os.readlink(p).encode() if p.is_symlink() else comparable(p)
        )
        for p in sorted(folder.rglob("*"))
        if (p.is_file() or p.is_symlink())
        and p.name != "msFmkTranspltlog.txt"
        and p.suffix != ".xlsx"
    }


def entries(cache: Path) -> list[Path]:
    """The entries of a cache folder, whatever the format (not the temp files)."""
    return sorted(p for p in cache.rglob("*") if p.is_file() and not p.name.endswith(".tmp"))


def from_cache(out: Path) -> int:
    log = (out / "proj_msft" / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    return int(log.split("from cache ", 1)[1].split(",", 1)[0].split()[0])


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, dict[str, bytes]]:
    """A project, a cache filled by a cold run, and the output of a run without the cache."""
    src = make_project(tmp_path)
    code, output = migrate(src, tmp_path / "nocache", "--no-cache")
    assert code == 0, output
    code, output = migrate(src, tmp_path / "cold", "--cache-dir", str(tmp_path / "cache"))
    assert code == 0, output
    expected = tree(tmp_path / "nocache" / "proj_msft")
    assert tree(tmp_path / "cold" / "proj_msft") == expected
    assert b"torch_npu" in expected["train.py"]
    assert len(entries(tmp_path / "cache")) >= N_MIGRATED + 1  # + the facts of kernels.py
    return src, tmp_path / "cache", expected


# -- forging entries ---------------------------------------------------------------------------
def resign(path: Path, change: Callable[[bytes, bytes], tuple[bytes, bytes]]) -> None:
    """Rewrites an entry of the current format with ``change(value, payload)`` applied and its
    sizes and hash made consistent again: a forgery only the content checks can catch."""
    data = path.read_bytes()
    head, _, body = data.partition(b"\n")
    meta = json.loads(head)
    size = meta["value_size"]
    value, payload = change(body[:size], body[size:])
    meta["value_size"] = len(value)
    meta["sha256"] = hashlib.sha256(value + payload).hexdigest()
    path.write_bytes(json.dumps(meta).encode() + b"\n" + value + payload)


def with_value(edit: Callable[[dict], object]) -> Callable[[bytes, bytes], tuple[bytes, bytes]]:
    def change(value: bytes, payload: bytes) -> tuple[bytes, bytes]:
        loaded = json.loads(value)
        return json.dumps(edit(loaded) if isinstance(loaded, dict) else 1).encode(), payload

    return change


def wrong_types(value: dict) -> object:
    if "status" not in value:  # the facts of a module
        return {"add_kernel": 1}
    return {**value, "python": 1, "events": [[None] * 11]}


def forge_entry(how: str, path: Path, other: Path, other_data: bytes) -> None:
    """Replaces one entry; ``other`` is another entry (``other_data`` its bytes)."""
    data = path.read_bytes()
    if how == "swapped":
        path.write_bytes(other_data)
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(os.urandom(len(data)))
    elif how == "not utf-8":
        path.write_bytes(b"\xff\xfe" + data)
    elif how == "enormous":
        with path.open("r+b") as fh:
            fh.truncate(getattr(cache_module, "MAX_ENTRY_BYTES", 2**26) + 1)  # sparse: cheap
    elif how == "wrong key":
        path.write_bytes(data.replace(path.stem.encode(), other.stem.encode()))
    elif how == "wrong types":
        if path.suffix == ".pkl":  # the old format: a pickled 1, a tuple of the wrong shape
            path.write_bytes(pickle.dumps((1, 2, 3) if path.name < other.name else 1))
        else:
            resign(path, with_value(wrong_types))
    elif how == "nested 100k deep":
        if path.suffix == ".pkl":
            path.write_bytes(pickle.dumps([]) * 2)  # valid, but not a result
        else:
            resign(path, lambda v, p: (b"[" * 100_000 + b"]" * 100_000, p))
    elif how == "symlink to another entry":
        path.unlink()
        path.symlink_to(other)
    elif how == "directory":
        path.unlink()
        (path / "inside").mkdir(parents=True)
    else:
        raise AssertionError(how)


FORGERIES = [
    "swapped",
    "truncated",
    "garbage",
    "not utf-8",
    "enormous",
    "wrong key",
    "wrong types",
    "nested 100k deep",
    "symlink to another entry",
    "directory",
]


@pytest.mark.parametrize("how", FORGERIES)
def test_a_forged_entry_is_a_miss(
    how: str, setup: tuple[Path, Path, dict[str, bytes]], tmp_path: Path
) -> None:
    """Every entry forged: the run migrates every file again, exit 0, the output of a run
    without the cache; then the entries are rewritten (but a folder in the way)."""
    src, cache, expected = setup
    found = entries(cache)
    contents = [p.read_bytes() for p in found]
    for i, path in enumerate(found):
        j = (i + 1) % len(found)
        forge_entry(how, path, found[j], contents[j])
    code, output = migrate(src, tmp_path / "warm", "--cache-dir", str(cache))
    assert code == 0, output
    assert tree(tmp_path / "warm" / "proj_msft") == expected
    assert from_cache(tmp_path / "warm") == 0
    assert not list(cache.rglob("*.tmp"))
    code, output = migrate(src, tmp_path / "again", "--cache-dir", str(cache))
    assert code == 0, output
    assert tree(tmp_path / "again" / "proj_msft") == expected
    if how != "directory":
        assert from_cache(tmp_path / "again") == N_MIGRATED  # rewritten by the run before


def test_a_malicious_pickle_is_never_loaded(
    setup: tuple[Path, Path, dict[str, bytes]], tmp_path: Path
) -> None:
    """A pickle whose loading runs a command, at every entry and at the old entry path
    (``<key>.pkl``): nothing runs, the output is right."""
    src, cache, expected = setup
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return os.system, (f"touch {shlex.quote(str(marker))}",)

    payload = pickle.dumps(Exploit())
    for path in entries(cache):
        path.write_bytes(payload)
        path.with_suffix(".pkl").write_bytes(payload)
    code, output = migrate(src, tmp_path / "warm", "--cache-dir", str(cache))
    assert code == 0, output
    assert not marker.exists()
    assert tree(tmp_path / "warm" / "proj_msft") == expected


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_place_of_an_entry_does_not_block(
    setup: tuple[Path, Path, dict[str, bytes]], tmp_path: Path
) -> None:
    """Opening a FIFO for reading waits for a writer: the run must not."""
    src, cache, expected = setup
    for path in entries(cache):
        path.unlink()
        os.mkfifo(path)
    cmd = [sys.executable, "-m", "ms_fmk_transplt", "-q", "-i", str(src), "-o"]
    cmd += [str(tmp_path / "warm"), "-j", "1", "--cache-dir", str(cache)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the run blocked on a FIFO in the cache")
    assert done.returncode == 0, done.stderr
    assert tree(tmp_path / "warm" / "proj_msft") == expected


def test_a_consistent_forgery_cannot_crash_the_run(
    setup: tuple[Path, Path, dict[str, bytes]], tmp_path: Path
) -> None:
    """The documented limit: an entry forged with the right key, shape and hash is taken (as
    with any build cache). Odd but well-typed values (lines far outside the file, an unknown
    rule) change the reports, never the exit code."""
    src, cache, _ = setup

    def odd(value: dict) -> object:
        if "status" not in value:
            return value
        events = [[*e[:1], 10**9, -5, "no.such_rule", *e[4:]] for e in value["events"]]
        notices = [[*n[:1], -(10**9), "no.such_rule", *n[3:]] for n in value["notices"]]
        return {**value, "events": events, "notices": notices}

    for path in entries(cache):
        resign(path, with_value(odd))
    code, output = migrate(src, tmp_path / "warm", "--cache-dir", str(cache))
    assert code == 0, output
    assert from_cache(tmp_path / "warm") == N_MIGRATED


def test_a_warm_run_gives_the_cold_run_outputs_and_records(tmp_path: Path) -> None:
    src = make_project(tmp_path)
    options = {"input": str(src), "jobs": 1, "overwrite": True, "cache_dir": str(tmp_path / "c")}
    cold = run(RunOptions(output=str(tmp_path / "cold"), **options))  # type: ignore[arg-type]
    warm = run(RunOptions(output=str(tmp_path / "warm"), **options))  # type: ignore[arg-type]
    assert tree(cold.output_dir) == tree(warm.output_dir)

    def comparable(r: FileRecord) -> FileRecord:
        return dataclasses.replace(r, time=datetime(2000, 1, 1), cached=False, timings={})

    assert [comparable(r) for r in cold.files] == [comparable(r) for r in warm.files]
    assert sum(r.cached for r in warm.files) == N_MIGRATED
    assert not any(r.cached for r in cold.files)


class FullDisk:
    """A file whose writes fail as on a full disk (or are interrupted)."""

    def __init__(self, raw: object, error: BaseException) -> None:
        self.raw, self.error = raw, error

    def write(self, data: bytes) -> int:
        raise self.error

    def __enter__(self) -> FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self.raw.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "error", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()]
)
def test_a_failed_write_leaves_no_temp_file(
    error: BaseException, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.fdopen
    monkeypatch.setattr(os, "fdopen", lambda fd, *a, **k: FullDisk(real(fd, *a, **k), error))
    cache = cache_module.Cache(tmp_path / "c", "fingerprint")
    key = cache.key("a.py", b"x = 1\n")
    if isinstance(error, OSError):
        cache.put(key, {"names": "values"})  # a cache that cannot be written only costs speed
    else:
        with pytest.raises(KeyboardInterrupt):
            cache.put(key, {"names": "values"})
    monkeypatch.undo()
    assert [p for p in (tmp_path / "c").rglob("*") if p.is_file()] == []
    assert cache.get(key) is None


@pytest.mark.parametrize("where", ["cache", ".cache", "sub/deeper/cache"])
def test_a_cache_folder_inside_the_input_is_not_copied(where: str, tmp_path: Path) -> None:
    src = make_project(tmp_path)
    code, output = migrate(src, tmp_path / "nocache", "--no-cache")
    assert code == 0, output
    expected = tree(tmp_path / "nocache" / "proj_msft")
    for run_name in ("cold", "warm"):
        code, output = migrate(src, tmp_path / run_name, "--cache-dir", str(src / where))
        assert code == 0, output
        assert tree(tmp_path / run_name / "proj_msft") == expected
    assert entries(src / where)
    assert from_cache(tmp_path / "warm") == N_MIGRATED


@pytest.mark.parametrize(
    "where",
    [
        "out/proj_msft/cache",
        "out/proj_msft",
        "out/.proj_msft.partial-1/cache",
        "out/proj_msft.shard-1-of-2/cache",
    ],
)
def test_a_cache_folder_a_run_replaces_is_refused(where: str, tmp_path: Path) -> None:
    src = make_project(tmp_path)
    cache = tmp_path / where
    code, output = migrate(src, tmp_path / "out", "--cache-dir", str(cache))
    assert code == 2
    assert output.count("\n") == 1 and output.startswith(f"ms_fmk_transplt: error: {cache}: ")
    assert "the cache folder must not be inside the output" in output
    assert not cache.exists() and not (tmp_path / "out" / "proj_msft").exists()


def test_the_cache_folder_may_sit_beside_the_output_but_not_be_the_input(tmp_path: Path) -> None:
    src = make_project(tmp_path)
    code, output = migrate(src, tmp_path / "out", "--cache-dir", str(tmp_path / "out" / "cache"))
    assert code == 0, output
    code, output = migrate(src, tmp_path / "out2", "--cache-dir", str(src))
    assert code == 2 and "the cache folder must not be the input folder itself" in output
    assert sorted(p.name for p in src.iterdir()) == sorted({rel.split("/")[0] for rel in FILES})


@pytest.mark.parametrize("under", ["", "/cache"])
def test_a_cache_folder_that_is_a_file_is_refused(under: str, tmp_path: Path) -> None:
    src = make_project(tmp_path)
    (tmp_path / "afile").write_bytes(b"x")
    cache = f"{tmp_path / 'afile'}{under}"
    code, output = migrate(src, tmp_path / "out", "--cache-dir", cache)
    assert code == 2
    assert output.count("\n") == 1 and output.startswith(f"ms_fmk_transplt: error: {cache}: ")
    assert "not a folder" in output and not (tmp_path / "out").exists()
    assert (tmp_path / "afile").read_bytes() == b"x"
    zoo = tmp_path / "zoo"
    shutil.copytree(src, zoo / "model_a")
    code, output = migrate(zoo, tmp_path / "out", "--zoo", "--cache-dir", cache)
    assert code == 2 and output.startswith(f"ms_fmk_transplt: error: {cache}: "), output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "options",
    [
        ["--max-file-size", "0.1"],  # the big file is copied unchanged (it was migrated warm)
        ["-s"],
        ["--ignore", "tensor_methods"],
        ["--select", "tensor_methods"],
    ],
)
def test_a_warm_cache_of_other_options_gives_the_cold_run_of_these(
    options: list[str], tmp_path: Path
) -> None:
    """A cache filled by a run without ``options`` never serves a run with them: its outputs
    are those of a cold run with them (the fingerprint holds every engine option by value)."""
    src = make_project(tmp_path)
    big = "import torch\n\n" + "x = torch.zeros(1).cuda()\n" * 6000  # about 0.16 MB
    (src / "big.py").write_text(big, encoding="utf-8")
    cache = ["--cache-dir", str(tmp_path / "c")]
    code, output = migrate(src, tmp_path / "fill", *cache)
    assert code == 0, output
    code, output = migrate(src, tmp_path / "warm", *cache, *options)
    assert code == 0, output
    code, output = migrate(src, tmp_path / "cold", "--no-cache", *options)
    assert code == 0, output
    assert tree(tmp_path / "warm") == tree(tmp_path / "cold")
    assert tree(tmp_path / "warm") != tree(tmp_path / "fill")


def test_the_cache_key_covers_every_module_of_the_tool() -> None:
    """A change to any module of the tool invalidates the cache: its key hashes them all (the
    cache module moved into scan/ once and hashed only its own folder's)."""
    from ms_fmk_transplt.scan.cache import tool_sources

    package = Path(ms_fmk_transplt.__file__).resolve().parent
    assert tool_sources() == sorted(package.rglob("*.py"))
    names = {p.relative_to(package).as_posix() for p in tool_sources()}
    assert {"engine/migrate.py", "engine/rules/registry.py", "run/pipeline.py"} <= names


def test_the_fingerprint_holds_the_python_that_parses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file in a newer Python's syntax is skipped ("run the tool with a newer Python"): run
    under that Python, the cached skip of the older one must not be reused."""
    fingerprint = cache_module.fingerprint.__wrapped__  # (not its lru_cache)
    here = fingerprint("x")
    newer = (sys.version_info[0], sys.version_info[1] + 1, 0, "final", 0)
    monkeypatch.setattr(cache_module.sys, "version_info", newer)
    assert fingerprint("x") != here
