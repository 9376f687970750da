"""Only regular files of the input are ever opened: a FIFO, a socket or a device (``mknod``
of /dev/zero's numbers) would block the run or fill the disk. They are recognised without
opening them (``lstat``), and a file is opened without blocking and checked again on the open
descriptor (``fstat``), so one replaced by a FIFO between the two is refused too."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from ms_fmk_transplt.safety.fs_safety import open_new

_KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a folder",
}
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


class NotRegularFile(OSError):
    """A path that is a FIFO, socket, device or folder where a file was expected."""


def special_kind(path: Path) -> str | None:
    """ "a FIFO (named pipe)", "a socket", "a character device" or "a block device" when
    ``path`` itself (not what a link points to) is one of those; None otherwise (a regular
    file, a folder, a link, or a path that cannot be looked at: reading it says why)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    kind = stat.S_IFMT(mode)
    return _KINDS.get(kind) if kind != stat.S_IFDIR else None


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading, when it is a regular file (raises NotRegularFile
    otherwise, OSError when it cannot be opened)."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        kind = stat.S_IFMT(os.fstat(fd).st_mode)
        if kind != stat.S_IFREG:
            what = _KINDS.get(kind, "not a regular file")
            raise NotRegularFile(errno.EINVAL, f"{what}, not a regular file", os.fspath(path))
    except BaseException:
        os.close(fd)
        raise
    # the file object owns the descriptor from here: closing it here too would close it twice
    # (EBADF in place of the KeyboardInterrupt of a signal landing inside fdopen)
    return os.fdopen(fd, "rb")


def read_regular(path: Path) -> bytes:
    with open_regular(path) as fh:
        return fh.read()


def read_small_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of a regular file that is no link and at most ``limit`` bytes long; None for
    anything else, or when it cannot be read (what reads the input's files for facts: such a
    file says nothing, its own migration reports it)."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        return read_regular(path)
    except OSError:
        return None


def copy_regular(src: Path, dst: Path) -> None:
    """A regular file copied with its mode and times (as ``shutil.copy2``); an error opening
    ``src`` is an OSError whose ``filename`` is ``src``, anything after it concerns ``dst``."""
    import shutil  # (a run's copies: a --check copies nothing)

    with open_regular(src) as source:
        try:
            with open_new(dst) as target:  # never through a link
                shutil.copyfileobj(source, target, 2**20)
            shutil.copystat(src, dst)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, os.fspath(dst)) from exc
