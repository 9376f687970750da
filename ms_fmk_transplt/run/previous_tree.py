"""What a re-run into an existing ``<name>_msft`` (``--overwrite``) keeps of it: an output file
whose bytes and metadata are exactly what the run would write is hard-linked from the previous
tree into the staging folder instead of being written again, so a warm re-run writes only what
changed, and removing the previous tree afterwards frees nothing but names.

A file is kept only when all of this holds (else it is written as in a cold run):
- the previous tree is a real folder (not a link) and no folder on the way to the file in it is
  a link; the file itself is a regular file (opened with O_NOFOLLOW), owned by this user, with
  one name only (nothing else shares it: never the input's file, never a file linked in from
  elsewhere) and not the input file itself;
- its bytes are the output's, its mode bits and modification time the input file's (what
  ``shutil.copystat`` gives a written file), and neither it nor the input file has extended
  attributes (copystat copies those; comparing them is not worth it);
- after the link, the new name holds the very file that was compared (a swap in between is
  undone and the file written).

The previous tree itself is never changed: the staging folder only gains names for its files,
so an interrupted run (Ctrl-C) that removes the staging folder leaves it as it was. The access
time is the one thing a kept file does not take from the input (reading a file changes it)."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

_OPEN = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_CHUNK = 2**20
# folders of a previous tree known to be real folders (no link on the way), per process
_REAL_FOLDERS: dict[str, bool] = {}


def previous_tree(final_dir: Path, overwrite: bool) -> str | None:
    """The output folder a run replaces, when its files may be kept: a real folder (not a
    link) owned by this user; None otherwise."""
    _REAL_FOLDERS.clear()  # (a process may run several times: tests, --zoo)
    if not overwrite or not hasattr(os, "link"):
        return None
    try:
        info = os.lstat(final_dir)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or not _own(info):
        return None
    return os.fspath(final_dir)


def keep_written(previous: str | None, rel: str, data: bytes, src: Path, dst: Path) -> bool:
    """Whether ``dst`` is now a link of the previous tree's file at ``rel``, which holds
    exactly ``data`` with the metadata ``src`` gives (see the module); False: nothing done."""

    def same(fd: int) -> bool:
        view = memoryview(data)
        for start in range(0, len(data), _CHUNK):
            if os.read(fd, _CHUNK) != view[start : start + _CHUNK]:
                return False
        return os.read(fd, 1) == b""

    return _keep(previous, rel, src, dst, len(data), same)


def keep_copied(previous: str | None, rel: str, src: Path, dst: Path) -> bool:
    """Whether ``dst`` is now a link of the previous tree's file at ``rel``, a copy of the
    regular file ``src`` as it is now (bytes and metadata); False: nothing done."""

    def same(fd: int) -> bool:
        try:
            source = os.open(src, _OPEN)
        except OSError:
            return False
        try:
            if not stat.S_ISREG(os.fstat(source).st_mode):
                return False
            while True:
                mine = os.read(source, _CHUNK)
                if os.read(fd, _CHUNK) != mine:
                    return False
                if not mine:
                    return True
        finally:
            os.close(source)

    try:
        size = os.lstat(src).st_size
    except OSError:
        return False
    return _keep(previous, rel, src, dst, size, same)


def _keep(
    previous: str | None,
    rel: str,
    src: Path,
    dst: Path,
    size: int,
    same: Callable[[int], bool],
) -> bool:
    if previous is None or not _real_folders(previous, rel):
        return False
    old = os.path.join(previous, *rel.split("/"))
    try:
        source = os.lstat(src)
        fd = os.open(old, _OPEN)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not _matches(info, source, size) or _has_xattrs(fd, src) or not same(fd):
            return False
    except OSError:
        return False
    finally:
        os.close(fd)
    return _link(old, dst, info)


def _matches(info: os.stat_result, source: os.stat_result, size: int) -> bool:
    return (
        stat.S_ISREG(info.st_mode)
        and info.st_nlink == 1
        and _own(info)
        and (info.st_dev, info.st_ino) != (source.st_dev, source.st_ino)
        and info.st_size == size
        and stat.S_IMODE(info.st_mode) == stat.S_IMODE(source.st_mode)
        and info.st_mtime_ns == source.st_mtime_ns
    )


def _has_xattrs(fd: int, src: Path) -> bool:
    if not hasattr(os, "listxattr"):
        return False
    return bool(os.listxattr(fd)) or bool(os.listxattr(src, follow_symlinks=False))


def _link(old: str, dst: Path, info: os.stat_result) -> bool:
    """``dst`` a new name of ``old``, when ``old`` is still the file ``info`` describes."""
    try:
        os.link(old, dst, follow_symlinks=False)
    except OSError:  # no hard links on this file system, a name already there, ...
        return False
    try:
        now = os.lstat(dst)
        if (now.st_dev, now.st_ino, now.st_mtime_ns) == (
            info.st_dev,
            info.st_ino,
            info.st_mtime_ns,
        ):
            return True
    except OSError:
        pass
    with contextlib.suppress(OSError):
        os.unlink(dst)  # swapped since it was compared: written instead
    return False


def _real_folders(previous: str, rel: str) -> bool:
    """Whether every folder from ``previous`` down to ``rel``'s is a real folder, no link."""
    here = previous
    for part in rel.split("/")[:-1]:
        here = os.path.join(here, part)
        known = _REAL_FOLDERS.get(here)
        if known is None:
            try:
                known = stat.S_ISDIR(os.lstat(here).st_mode)
            except OSError:
                known = False
            _REAL_FOLDERS[here] = known
        if not known:
            return False
    return True


def _own(info: os.stat_result) -> bool:
    return not hasattr(os, "getuid") or info.st_uid == os.getuid()
