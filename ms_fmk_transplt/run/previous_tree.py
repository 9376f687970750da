"""What a re-run into an existing ``<name>_msft`` (``--overwrite``) keeps of it: an output file
whose bytes and metadata are exactly what the run would write is hard-linked from the previous
tree into the staging folder instead of being written again, so a warm re-run writes only what
changed, and removing the previous tree afterwards frees nothing but names.

A file is kept only when all of this holds (else it is written as in a cold run):
- it is reached from the previous tree's folder through real folders only, each owned by this
  user, opened one below the other (``O_NOFOLLOW``, ``dir_fd``: a folder swapped for a link on
  the way is not followed); the file itself is a regular file opened the same way, owned by
  this user, in the group a new file of the staging folder gets, with one name only (nothing
  else shares it: never the input's file, never a file linked in from elsewhere), and not the
  input file itself;
- its bytes are the output's, its mode bits and modification time the input file's, its
  extended attributes the input file's (what ``shutil.copystat`` gives a written file; the
  SELinux label, which the system sets, aside);
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
from typing import NamedTuple

_OPEN = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_FOLDER = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_CHUNK = 2**20
_SYSTEM_XATTRS = ("security.selinux",)  # set by the system on every new file


class Previous(NamedTuple):
    root: str  # the output folder the run replaces
    gid: int  # the group a file new in the staging folder gets


def previous_tree(final_dir: Path, staging: Path, overwrite: bool) -> Previous | None:
    """The output folder a run replaces, when its files may be kept: a real folder (not a
    link) owned by this user, on a system that links and opens below a folder's descriptor;
    None otherwise."""
    if not overwrite or not {os.open, os.link} <= os.supports_dir_fd:
        return None
    try:
        info, new = os.lstat(final_dir), os.lstat(staging)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or not _own(info):
        return None
    return Previous(os.fspath(final_dir), new.st_gid)


def keep_written(previous: Previous | None, rel: str, data: bytes, src: Path, dst: Path) -> bool:
    """Whether ``dst`` is now a link of the previous tree's file at ``rel``, which holds
    exactly ``data`` with the metadata ``src`` gives (see the module); False: nothing done."""

    def same(fd: int) -> bool:
        view = memoryview(data)
        for start in range(0, len(data), _CHUNK):
            if os.read(fd, _CHUNK) != view[start : start + _CHUNK]:
                return False
        return os.read(fd, 1) == b""

    return _keep(previous, rel, src, dst, len(data), same)


def keep_copied(previous: Previous | None, rel: str, src: Path, dst: Path) -> bool:
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
    previous: Previous | None,
    rel: str,
    src: Path,
    dst: Path,
    size: int,
    same: Callable[[int], bool],
) -> bool:
    if previous is None:
        return False
    *folders, name = rel.split("/")
    folder = _open_folder(previous.root, folders)
    if folder is None:
        return False
    try:
        source = os.lstat(src)
        fd = os.open(name, _OPEN, dir_fd=folder)
        try:
            info = os.fstat(fd)
            if not _matches(info, source, size) or info.st_gid != previous.gid:
                return False
            if _xattrs(fd) != _xattrs(src) or not same(fd):
                return False
        finally:
            os.close(fd)
        return _link(name, folder, dst, info)
    except OSError:
        return False
    finally:
        os.close(folder)


def _open_folder(root: str, folders: list[str]) -> int | None:
    """A descriptor of ``root/folders...``, each opened below the one before without following
    a link, each a folder owned by this user; None otherwise."""
    try:
        fd = os.open(root, _FOLDER)
    except OSError:
        return None
    try:
        for part in ["", *folders]:
            if part:
                below = os.open(part, _FOLDER, dir_fd=fd)
                os.close(fd)
                fd = below
            info = os.fstat(fd)
            if not stat.S_ISDIR(info.st_mode) or not _own(info):
                os.close(fd)
                return None
    except OSError:
        os.close(fd)
        return None
    return fd


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


def _xattrs(target: int | Path) -> dict[str, bytes]:
    """The extended attributes of an open file or of a path (not through a link), the
    system's label aside."""
    if not hasattr(os, "listxattr"):
        return {}
    if isinstance(target, int):
        names = os.listxattr(target)
        return {n: os.getxattr(target, n) for n in names if n not in _SYSTEM_XATTRS}
    names = os.listxattr(target, follow_symlinks=False)
    return {
        n: os.getxattr(target, n, follow_symlinks=False) for n in names if n not in _SYSTEM_XATTRS
    }


def _link(name: str, folder: int, dst: Path, info: os.stat_result) -> bool:
    """``dst`` a new name of ``name`` in ``folder``, when that is still the file ``info``
    describes."""
    try:
        os.link(name, dst, src_dir_fd=folder, follow_symlinks=False)
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


def _own(info: os.stat_result) -> bool:
    return not hasattr(os, "getuid") or info.st_uid == os.getuid()
