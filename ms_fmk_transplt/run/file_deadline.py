"""A time bound per file: a file the engine is still migrating after ``seconds`` (default 60,
``--file-timeout``) is given up, copied unchanged and reported (rule parse.limit), and the run
goes on. The bound is an interval timer (SIGALRM) in the thread that migrates, the main thread
of the tool or of a pool worker; where there is none (Windows, a caller's thread) files are
not bounded in time. Native code is not interrupted: the engine's guards (size, nesting, depth)
keep LibCST and the stdlib parser away from the inputs that would keep them busy."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class FileTimeout(Exception):
    """The file took longer than its time bound."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raises FileTimeout in the block once ``seconds`` have passed (0: no bound)."""
    if (
        seconds <= 0
        or not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def expired(signum: int, frame: FrameType | None) -> None:
        raise FileTimeout(f"still being migrated after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
