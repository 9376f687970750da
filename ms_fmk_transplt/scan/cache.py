"""Incremental re-runs: migration results cached by file content + rules + tool version.

A cache hit skips parsing and transforming entirely; the output is the same bytes the cold run
wrote. Location: --cache-dir, else $MS_FMK_TRANSPLT_CACHE, else $XDG_CACHE_HOME/ms_fmk_transplt
(~/.cache/ms_fmk_transplt); --no-cache (or MS_FMK_TRANSPLT_CACHE=off) disables it.

An entry is data, never code: ``<root>/<key[:2]>/<key>.entry`` holds one line of ASCII JSON (the
format, the key, the tool version, the sizes and a sha256 of what follows), then the value as
ASCII JSON of plain values, then the raw payload bytes (a migrated file's output). Reading
checks all of it; anything else (a missing, truncated, foreign, oversized or malformed entry, a
link, a folder, a FIFO) is a miss, never an error: the caller computes the result again and the
entry is rewritten. Entries are written atomically (temp file + rename; the temp file is removed
when the write fails), so parallel workers and interrupted runs never leave a torn entry.

Trust: whoever can write into the cache folder cannot run code or stop a run, but an entry
forged consistently (a right key, hash and shape) changes that file's output, as with any build
cache: keep the folder writable only by trusted users (the default location is per user).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from ms_fmk_transplt import __version__
from ms_fmk_transplt.tables import rules_dir

FORMAT = 5  # 4: JSON + raw bytes, 5: libcst_stages (3 and before: pickle, never read)
SUFFIX = ".entry"
MAX_ENTRY_BYTES = 64 * 2**20  # larger entries are neither written nor read
MAX_META_BYTES = 1024  # the first line
_META_KEYS = frozenset({"format", "key", "tool", "value_size", "payload_size", "sha256"})
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)  # a link planted as an entry is not followed
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO planted as an entry does not block the open
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def default_dir() -> Path | None:
    env = os.environ.get("MS_FMK_TRANSPLT_CACHE")
    if env:
        return None if env.lower() in ("off", "0", "no", "none") else Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ms_fmk_transplt"


def tool_sources() -> list[Path]:
    """Every module of the tool (this module is in scan/: the package is its folder's parent)."""
    return sorted(Path(__file__).resolve().parent.parent.rglob("*.py"))


@lru_cache(maxsize=16)
def fingerprint(extra: str = "") -> str:
    """Everything besides a file's content that decides its migration; the Python running the
    tool too: its parser decides which syntax reads (a file in a newer Python's syntax is
    skipped, and migrated once the tool runs under that Python)."""
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    h = hashlib.sha256(f"{FORMAT}|{__version__}|{python}|{extra}".encode())
    sources = tool_sources()  # the tool's own code: any change invalidates
    rules = rules_dir()
    for path in [*sorted(rules.rglob("*.json")), *sources]:
        h.update(
            path.relative_to(rules).as_posix().encode()
            if path.is_relative_to(rules)
            else path.name.encode()
        )
        h.update(path.read_bytes())
    return h.hexdigest()


class Entry(NamedTuple):
    value: object  # plain JSON values: dict, list, str, int, float, bool, None
    payload: bytes | None


@dataclass(frozen=True)
class Cache:
    root: Path
    fingerprint: str

    def key(self, rel: str, data: bytes) -> str:
        return hashlib.sha256(
            f"{self.fingerprint}|{rel}|".encode("utf-8", "surrogateescape") + data
        ).hexdigest()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}{SUFFIX}"

    def get(self, key: str) -> Entry | None:
        """The entry stored under ``key``, or None (a miss) for anything else."""
        data = _read_bounded(self.path(key))
        if data is None:
            return None
        try:
            return _parse(key, data)
        except (ValueError, RecursionError):  # not JSON, not ASCII, nested too deep
            return None

    def put(self, key: str, value: object, payload: bytes | None = None) -> None:
        """Stores ``value`` (plain JSON values) and ``payload``; a value that is not plain,
        an entry too large or a folder that cannot be written only costs speed."""
        try:
            body = json.dumps(value, separators=(",", ":"), allow_nan=False).encode("ascii")
        except (TypeError, ValueError, RecursionError):
            return
        tail = payload if payload is not None else b""
        if len(body) + len(tail) > MAX_ENTRY_BYTES - MAX_META_BYTES:
            return
        digest = hashlib.sha256(body)
        digest.update(tail)
        meta = {
            "format": FORMAT,
            "key": key,
            "tool": __version__,
            "value_size": len(body),
            "payload_size": -1 if payload is None else len(payload),
            "sha256": digest.hexdigest(),
        }
        head = json.dumps(meta, separators=(",", ":")).encode("ascii") + b"\n"
        try:
            _write_atomically(self.path(key), (head, body, tail))
        except OSError:
            pass  # a cache that cannot be written only costs speed


def _read_bounded(path: Path) -> bytes | None:
    """The bytes of a regular file of at most MAX_ENTRY_BYTES, not reached through a link at
    its last component; None for anything else."""
    if not hasattr(os, "O_NOFOLLOW") and path.is_symlink():
        return None
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:  # missing, a link (ELOOP), unreadable
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
            return None
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_ENTRY_BYTES:  # one read for a regular file, unless it grows
            want = max(info.st_size + 1 - size, 2**16)
            chunk = os.read(fd, min(want, MAX_ENTRY_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks) if size <= MAX_ENTRY_BYTES else None


def _parse(key: str, data: bytes) -> Entry | None:
    end = data.find(b"\n", 0, MAX_META_BYTES)
    if end < 0:
        return None
    meta = json.loads(data[:end].decode("ascii"))
    if type(meta) is not dict or meta.keys() != _META_KEYS:
        return None
    if meta["format"] != FORMAT or meta["key"] != key or meta["tool"] != __version__:
        return None
    value_size, payload_size = meta["value_size"], meta["payload_size"]
    if type(value_size) is not int or type(payload_size) is not int:
        return None
    if value_size < 0 or payload_size < -1:
        return None
    body = memoryview(data)[end + 1 :]
    if len(body) != value_size + max(payload_size, 0):
        return None
    if hashlib.sha256(body).hexdigest() != meta["sha256"]:
        return None
    value = json.loads(str(body[:value_size], "ascii"))
    return Entry(value, None if payload_size < 0 else bytes(body[value_size:]))


def _write_atomically(path: Path, parts: tuple[bytes, ...]) -> None:
    """Writes a temp file beside ``path`` and renames it into place; the temp file is removed
    when anything fails (a full disk, an interrupt). A linked sub-folder is not written into."""
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    if folder.is_symlink():
        return
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f"{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            for part in parts:
                fh.write(part)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def files_digest(files: Iterable[tuple[str, bytes]]) -> bytes:
    """The sha256 of files' paths and contents, each length-prefixed (the project's facts and
    model are cached by it, an installed package's --deps result too)."""
    digest = hashlib.sha256()
    for rel_path, source in files:
        encoded = rel_path.encode("utf-8", "surrogateescape")
        digest.update(b"%d|%s|%d|" % (len(encoded), encoded, len(source)))
        digest.update(source)
    return digest.digest()
