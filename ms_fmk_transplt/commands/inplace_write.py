"""How ``--inplace`` rewrites a file, and what stops it: a file is never half-written.

* a symbolic link is not followed (nor is it replaced by a regular file): it is reported and
  left as it is; the file it points to is migrated when it is given itself;
* a read-only file (no write bit, whoever runs the tool, root included) is reported and left;
* a file with one name is replaced by a complete new file (same mode, same owner where the
  system allows it) in one rename;
* a file with several hard links keeps being one file: the new content is first written to a
  temporary file beside it (so a full disk stops before the original is touched), then copied
  into the original; a write error during that copy puts the old content back;
* Ctrl-C and SIGTERM wait until the file being written is complete, then stop the command
  with exit code 130 and one line.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import click

from ms_fmk_transplt.errors import EXIT_INTERRUPTED, INTERRUPTED

_WRITE_BITS = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
_state = {"writing": False, "pending": 0}


def refusal(path: Path) -> str | None:
    """Why ``--inplace`` leaves ``path`` as it is (None: it rewrites it)."""
    if path.is_symlink():
        return "a symbolic link, not followed (give the file it points to)"
    if not path.stat().st_mode & _WRITE_BITS or not os.access(path, os.W_OK):
        return "read-only (give it write permission to migrate it)"
    return None


def write(path: Path, data: bytes, before: bytes) -> None:
    """Rewrites ``path`` with ``data``: afterwards it holds either ``before`` or ``data``."""
    _state["writing"] = True
    try:
        info = path.stat()
        if info.st_nlink > 1:
            _write_into(path, data, before)
        else:
            _replace(path, data, info)
    finally:
        _state["writing"] = False
    if _state["pending"]:  # a signal came while the file was written: stop now
        raise KeyboardInterrupt


def _temporary(path: Path, data: bytes) -> str:
    import tempfile  # (--inplace only: --check and --diff write nothing)

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".msft")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def _replace(path: Path, data: bytes, info: os.stat_result) -> None:
    tmp = _temporary(path, data)
    try:
        os.chmod(tmp, info.st_mode & 0o7777)
        if hasattr(os, "chown") and (info.st_uid, info.st_gid) != _owner(tmp):
            with contextlib.suppress(OSError):  # only root may give a file away
                os.chown(tmp, info.st_uid, info.st_gid)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _owner(path: str) -> tuple[int, int]:
    info = os.stat(path)
    return info.st_uid, info.st_gid


def _write_into(path: Path, data: bytes, before: bytes) -> None:
    """The content goes into the file's own inode, so its hard links stay one file."""
    tmp = _temporary(path, data)  # the space is there before the original is touched
    try:
        with open(path, "r+b") as fh:
            try:
                fh.write(data)
                fh.truncate()
                fh.flush()
            except OSError:
                fh.seek(0)
                fh.write(before)
                fh.truncate()
                raise
    finally:
        os.unlink(tmp)


@contextlib.contextmanager
def stopped_by_signals(mode: str) -> Iterator[None]:
    """Ctrl-C and SIGTERM end a path mode with one line and exit code 130; during a write they
    wait for its end (see ``write``)."""
    INTERRUPTED.clear()
    _state["pending"] = 0
    main = threading.current_thread() is threading.main_thread()

    def handler(signum: int, frame: FrameType | None) -> None:
        INTERRUPTED.set()  # the per-file isolation then re-raises what the signal broke
        _state["pending"] = signum
        if not _state["writing"]:
            raise KeyboardInterrupt

    previous = [(s, signal.signal(s, handler)) for s in _SIGNALS] if main else []
    try:
        yield
    except KeyboardInterrupt:
        what = signal.Signals(_state["pending"] or signal.SIGINT).name
        done = (
            "the files rewritten before it are migrated, the others are unchanged "
            "(none is half-written)"
            if mode == "inplace"
            else "nothing was written"
        )
        click.echo(f"ms_fmk_transplt: interrupted by {what}: {done}", err=True)
        sys.exit(EXIT_INTERRUPTED)
    finally:
        for sig, old in previous:
            signal.signal(sig, old)


_SIGNALS = (signal.SIGINT, signal.SIGTERM)
