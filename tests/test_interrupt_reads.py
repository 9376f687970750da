"""A signal that lands while an input file is read stops the run as an interrupt (exit 130),
never as "cannot read this file" (exit 2): seen under load in test_bad_input's SIGTERM case,
where the descriptor was closed twice and EBADF replaced the KeyboardInterrupt."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from ms_fmk_transplt.run import file_migration
from ms_fmk_transplt.run.staging import INTERRUPTED
from ms_fmk_transplt.safety import regular_files


def test_an_interrupt_inside_fdopen_stays_an_interrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "train.py"
    path.write_bytes(b"x = 1\n")

    def interrupted_fdopen(fd: int, mode: str) -> object:
        os.close(fd)  # the file object owned the descriptor and closed it while unwinding
        raise KeyboardInterrupt

    monkeypatch.setattr(regular_files.os, "fdopen", interrupted_fdopen)
    with pytest.raises(KeyboardInterrupt):
        regular_files.read_regular(path)


def test_a_read_error_while_interrupted_is_the_interrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_read(path: Path) -> bytes:
        INTERRUPTED.set()  # the handler ran: the run is stopping
        raise OSError(errno.EBADF, os.strerror(errno.EBADF), os.fspath(path))

    monkeypatch.setattr(file_migration, "read_regular", failing_read)
    try:
        with pytest.raises(KeyboardInterrupt):
            file_migration._read(tmp_path / "train.py")
    finally:
        INTERRUPTED.clear()
