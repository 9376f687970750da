"""File-system steps that must not replace, follow or overflow anything by accident: a rename
that fails when the target exists (two runs into the same output), removing a path without
following it if it is a link, names within the file system's limit, paths read from a file
(a shard part's records) checked to stay inside the folder they are written into, and the two
ways the tool writes a file: ``create_new`` (a name nothing holds yet: fails on anything there,
a link included) and ``write_file`` (a complete new file renamed over the name: a link there,
copied from the input, is replaced, never written through). Every file the tool writes goes
through one of them (tests/test_written_files.py keeps it so)."""

from __future__ import annotations

import errno
import glob
import os
import sys
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from ms_fmk_transplt.errors import UserError

NAME_MAX = 255  # bytes of one path component on ext4, xfs, btrfs, APFS, NTFS (UTF-16 units)
_RENAME_NOREPLACE = 1
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
_NEW_FILE |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_AT_FDCWD = -100


def _renameat2(src: Path, dst: Path) -> bool:
    """Linux renameat2(RENAME_NOREPLACE); False when the kernel, libc or file system lacks it."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # (each module here imported where it is used: a --check writes nothing)

    try:
        call = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):  # libc without renameat2 (glibc < 2.28)
        return False
    call.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    call.restype = ctypes.c_int
    if call(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):  # not supported here: fall back
        return False
    raise OSError(code, os.strerror(code), os.fspath(src), None, os.fspath(dst))


def rename_no_replace(src: Path, dst: Path) -> None:
    """Moves ``src`` to ``dst`` atomically, or raises FileExistsError when ``dst`` exists (a
    folder, a file or a link, even dangling): never replaces what another process put there."""
    if _renameat2(src, dst):
        return
    if os.name == "nt":  # os.rename never replaces on Windows
        os.rename(src, dst)
        return
    # elsewhere: claim the name with mkdir (atomic, fails if it exists), then rename onto the
    # empty folder we own; a folder someone put there meanwhile is not empty and stops it
    os.mkdir(dst)
    try:
        os.rename(src, dst)
    except OSError as exc:
        os.rmdir(dst)
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(dst)) from exc
        raise


def discard(path: Path) -> None:
    """Removes ``path``: a link (even to a folder) or a file is unlinked, never followed; a
    folder is removed with what it holds (links inside are unlinked, not followed)."""
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        import shutil

        shutil.rmtree(path)


def name_bytes(name: str) -> int:
    return len(os.fsencode(name))


def check_name_length(path: Path, what: str) -> None:
    """Exit 2 (one line) for a path component the file system cannot hold."""
    size = name_bytes(path.name)
    if size > NAME_MAX:
        raise UserError(
            path, f"{what} name would be {size} bytes, longer than file systems allow ({NAME_MAX})"
        )


def short_stem(name: str, room: int) -> str:
    """``name``, or when ``name`` plus ``room`` bytes would not fit in one path component, a
    readable prefix of it and a digest of the whole (the same for the same name)."""
    if name_bytes(name) + room <= NAME_MAX:
        return name
    import hashlib

    digest = "~" + hashlib.sha1(name.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    prefix = name
    while name_bytes(prefix + digest) + room > NAME_MAX:
        prefix = prefix[:-1]
    return prefix + digest


def relative_part_path(text: object) -> PurePosixPath | None:
    """A path read from a file (records of a shard part) as a safe relative path, or None when
    it is not one: empty, absolute, a drive, ``..``/``.``/empty segments, NUL, backslashes."""
    if not isinstance(text, str) or not text or "\0" in text or "\\" in text:
        return None
    if text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        return None
    segments = text.split("/")
    if any(s in ("", ".", "..") for s in segments):
        return None
    if any(name_bytes(s) > NAME_MAX for s in segments):
        return None
    return PurePosixPath(text)


def inside(root: Path, rel: PurePosixPath) -> bool:
    """True when ``root / rel`` stays in ``root``: no existing folder on the way is a link and
    its real path is under the real path of ``root``."""
    real_root = os.path.realpath(root)
    here = root
    for segment in rel.parts[:-1]:
        here = here / segment
        if here.is_symlink():
            return False
    target = os.path.realpath(root.joinpath(*rel.parts[:-1]))
    return os.path.commonpath([real_root, target]) == real_root


def _write_all(fd: int, data: bytes, mode: int | None) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if mode is not None and hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


def open_new(path: Path) -> BinaryIO:
    """A file created at ``path`` by this call (O_CREAT | O_EXCL | O_NOFOLLOW), open for
    writing: FileExistsError when anything is there, a link (even dangling) included."""
    return os.fdopen(os.open(path, _NEW_FILE, 0o666), "wb")


def create_new(path: Path, data: bytes, mode: int | None = None) -> None:
    """Writes ``data`` into a file created at ``path`` by this call (O_CREAT | O_EXCL |
    O_NOFOLLOW): FileExistsError when anything is there, a link (even dangling) included, so
    nothing is ever written through a link. ``mode``: set exactly (else 0o666 less the umask)."""
    fd = os.open(path, _NEW_FILE, 0o666)
    try:
        _write_all(fd, data, mode)
    except BaseException:
        os.unlink(path)
        raise


def write_file(path: Path, data: bytes, mode: int | None = None) -> None:
    """Writes ``data`` as a complete new file renamed onto ``path``: whatever ``path`` was (a
    file, or a link from the input, even dangling) is replaced, never followed or written
    through, and ``path`` never holds half of ``data``."""
    tmp = path.with_name(f"{_temporary_stem(path, os.getpid())}.{os.urandom(4).hex()}.tmp")
    create_new(tmp, data, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def remove_temporaries(path: Path, pid: int) -> None:
    """Removes what a ``write_file`` of ``path`` by process ``pid`` that died left: its
    temporary file."""
    for left in path.parent.glob(f"{glob.escape(_temporary_stem(path, pid))}.*.tmp"):
        left.unlink(missing_ok=True)


def _temporary_stem(path: Path, pid: int) -> str:
    return f".{short_stem(path.name, 24)}.{pid}"


def write_text(path: Path, text: str, errors: str = "strict", mode: int | None = None) -> None:
    """``write_file`` of ``text`` in UTF-8 (``errors`` as for ``str.encode``)."""
    write_file(path, text.encode("utf-8", errors), mode)
