"""Where a run's output is assembled: a hidden sibling folder of ``<name>_msft``, moved into
place only when complete, so that a ``<name>_msft`` folder never exists half-written; and what
happens when a run stops (Ctrl-C, SIGTERM, a full disk, a bug): the partial folder is removed and
``<name>_msft.interrupted.log`` says why and how far the run got."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any, Optional, Union

from ms_fmk_transplt.errors import INTERRUPTED as INTERRUPTED  # (the run's, read by others)
from ms_fmk_transplt.errors import InternalError, Interrupted, UserError
from ms_fmk_transplt.events import Severity
from ms_fmk_transplt.records import RunResult
from ms_fmk_transplt.safe_names import shown
from ms_fmk_transplt.safety.fs_safety import (
    check_name_length,
    discard,
    rename_no_replace,
    short_stem,
)

# what signal.signal() returns: the previous handler
Handler = Union[Callable[[int, Optional[FrameType]], Any], int, signal.Handlers, None]


def assemble(result: RunResult, build: Callable[[Path, RunResult], RunResult]) -> RunResult:
    """Runs ``build(staging, result)`` in a hidden sibling folder of the output and moves it
    into place when complete: a ``<name>_msft`` folder never exists half-written, and a run that
    stops (Ctrl-C, SIGTERM, full disk, a bug) leaves nothing but its log. Returns the result
    ``build`` gives."""
    final_dir = result.output_dir
    parent = final_dir.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(parent, f"cannot create the output folder ({exc.strerror})") from exc
    if not os.access(parent, os.W_OK):
        raise UserError(parent, "output folder is not writable")
    _remove_leftovers(final_dir, result)
    staging = parent / f"{_hidden_stem(final_dir)}.partial-{os.getpid()}"
    if os.path.lexists(staging):
        discard(staging)
    with signals_interrupt():
        return _build_in(staging, build, result)


def _build_in(
    staging: Path, build: Callable[[Path, RunResult], RunResult], result: RunResult
) -> RunResult:
    """``build(staging, result)``, then the folder moved into place; whatever stops it removes
    the folder and writes the run's log (of ``result``, whose lists ``build`` fills as it
    goes)."""
    final_dir = result.output_dir
    try:
        staging.mkdir()
        built = build(staging, result)
        _move_into_place(staging, final_dir, built)
        return built
    except KeyboardInterrupt as exc:
        log = _stopped(result, staging, f"interrupted by {_signal_name()}")
        raise Interrupted(log) from exc
    except UserError:
        raise  # bad input found on the way: one line, nothing written
    except OSError as exc:  # the output location failed us (disk full, permissions changed)
        where = _public(exc.filename, staging, final_dir)
        _stopped(result, staging, f"stopped, cannot write {where} ({exc.strerror})")
        raise UserError(where, f"cannot write ({exc.strerror}); nothing was written") from exc
    except Exception as exc:
        if INTERRUPTED.is_set():  # the signal's KeyboardInterrupt landed inside library code
            # (a Condition's lock restore in multiprocessing) and surfaced as another error
            log = _stopped(result, staging, f"interrupted by {_signal_name()}")
            raise Interrupted(log) from exc
        what = f"{type(exc).__name__}: {exc}"
        log = _stopped(result, staging, f"stopped by an internal error ({what})", exc)
        raise InternalError(what, log) from exc
    finally:
        if staging.exists():  # interrupted or failed: never leave a half-written tree
            shutil.rmtree(staging, ignore_errors=True)


def check_output_name(final_dir: Path) -> None:
    """Exit 2 before anything is done when ``<name>_msft`` cannot exist (too long a name)."""
    check_name_length(final_dir, "the output folder")


_ROOM = len(".partial-") + 20  # a pid of up to 20 digits after the stem


def _hidden_stem(final_dir: Path) -> str:
    """``.<name>_msft``, the start of the staging (``.partial-<pid>``) and set-aside
    (``.old-<pid>``) folders; for a name too long for those, a shorter one with a digest."""
    return short_stem(f".{final_dir.name}", _ROOM)


def stopped_log(final_dir: Path) -> Path:
    """Where a run that did not finish says why: beside the output it did not write."""
    suffix = ".interrupted.log"
    return final_dir.parent / (short_stem(final_dir.name, len(suffix)) + suffix)


def stopped_early(result: RunResult) -> Path | None:
    """The log of a run interrupted before its staging folder existed (while it read the
    input, the project or the parts of a --merge-shards): nothing to remove."""
    return _stopped(result, None, f"interrupted by {_signal_name()}")


def _stopped(
    result: RunResult, staging: Path | None, reason: str, exc: BaseException | None = None
) -> Path | None:
    """Removes the partial output (first: it may be what filled the disk) and writes the log
    of the run that did not finish."""
    from ms_fmk_transplt.report import log  # only for a run that stopped

    if staging is not None:
        shutil.rmtree(staging, ignore_errors=True)
    path = stopped_log(result.output_dir)
    try:
        log.write_stopped(path, result, reason, exc)
    except OSError:
        path.unlink(missing_ok=True)  # never a half-written log either
        return None  # stderr still says what happened
    return path


def _remove_leftovers(final_dir: Path, result: RunResult) -> None:
    """Staging folders of runs that were killed (SIGKILL, power loss) and the log of an
    interrupted earlier run: a finished run must not sit beside stale traces of another."""
    stem = _hidden_stem(final_dir)
    kinds = (f"{stem}.partial", f"{stem}.old")
    for leftover in final_dir.parent.glob(f"{glob.escape(stem)}.*-*"):
        kind, _, pid = leftover.name.rpartition("-")
        if kind not in kinds or not pid.isdigit() or _alive(int(pid)):
            continue
        try:
            discard(leftover)  # a set-aside link is unlinked, its target never touched
        except OSError:
            continue
        result.notes.append(
            (Severity.WARNING, f"removed {shown(leftover)}, left behind by a run that was killed")
        )
    old_log = stopped_log(final_dir)
    if old_log.is_file():
        old_log.unlink()
        result.notes.append(
            (
                Severity.INFO,
                f"removed {shown(old_log)}, the log of an earlier run that was interrupted",
            )
        )


def _public(filename: object, staging: Path, final_dir: Path) -> Path:
    """A path inside the staging folder, named as the user will know it."""
    if not filename:
        return final_dir
    path = Path(os.fsdecode(filename))  # type: ignore[arg-type]  # an OSError's filename
    try:
        return final_dir / path.relative_to(staging)
    except ValueError:
        return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


BEGUN = threading.Event()  # a run has installed its handlers (launch: "while starting" or not)
_SIGNAL: list[int] = []  # the signal that interrupted the run


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM stops the run as Ctrl-C does (a KeyboardInterrupt, which the
    run turns into its one line, exit 130 and its log) from the run's first step, not only
    while its output is assembled; the handlers of before are restored on leaving."""
    BEGUN.set()
    previous_int = signal.getsignal(signal.SIGINT)
    previous = _terminate_as_interrupt()
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
            signal.signal(signal.SIGINT, previous_int)


def _terminate_as_interrupt() -> Handler:
    """Ctrl-C and SIGTERM stop the run, so the staging folder is always removed. The flag makes
    it stick even when the signal lands inside native parser code that turns it into an ordinary
    exception (which per-file isolation would otherwise record as a failed file)."""
    INTERRUPTED.clear()
    _SIGNAL.clear()
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: FrameType | None) -> None:
        _SIGNAL[:] = [signum]
        INTERRUPTED.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    return signal.signal(signal.SIGTERM, handler)


def _signal_name() -> str:
    if not _SIGNAL:
        return "Ctrl-C"
    name = signal.Signals(_SIGNAL[0]).name
    return "Ctrl-C (SIGINT)" if name == "SIGINT" else name


def _move_into_place(staging: Path, final_dir: Path, result: RunResult) -> None:
    """The complete staging folder becomes ``<name>_msft`` in one rename that never replaces:
    without --overwrite, a ``<name>_msft`` another run created meanwhile stops this one (its
    output is kept, this one's is removed). With --overwrite, what is there is set aside
    (a link: only the link) and removed once the new folder is in place."""
    trash = final_dir.parent / f"{_hidden_stem(final_dir)}.old-{os.getpid()}"
    for _ in range(_ATTEMPTS):
        try:
            rename_no_replace(staging, final_dir)
            break
        except FileExistsError:
            if not result.options.overwrite:
                raise UserError(
                    final_dir, "appeared while this run was writing it; nothing was written"
                ) from None
        if os.path.lexists(trash):
            discard(trash)
        try:
            os.replace(final_dir, trash)
        except FileNotFoundError:
            continue  # another --overwrite run set it aside first
    else:
        raise UserError(final_dir, "kept being replaced by another run; nothing was written")
    if os.path.lexists(trash):
        discard(trash)


_ATTEMPTS = 5
