"""User-facing errors and the documented exit codes."""

from __future__ import annotations

import sys
import threading
from typing import NoReturn

from ms_fmk_transplt.safe_names import shown

EXIT_OK = 0
EXIT_FILE_FAILURES = 1  # the run finished, but the engine failed on some files (copied unchanged)
EXIT_BAD_INPUT = 2  # bad command line / input / output location: nothing was written
EXIT_INTERNAL_ERROR = 3  # the run itself crashed (a bug): the partial output was removed
EXIT_INTERRUPTED = 130  # Ctrl-C / SIGTERM: the partial output was removed
# set by the handlers of Ctrl-C and SIGTERM (a run's staging, --inplace): the per-file isolation
# re-raises what the signal broke instead of recording it as the file's failure
INTERRUPTED = threading.Event()


def fail(message: str) -> NoReturn:
    """The one line ``ms_fmk_transplt: error: <message>`` on stderr, then exit EXIT_BAD_INPUT."""
    import click

    click.echo(f"ms_fmk_transplt: error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


class UserError(Exception):
    """A problem with what the user asked for; printed as one line, exit code EXIT_BAD_INPUT."""

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(f"{shown(path)}: {problem}")  # one line, whatever the name
        self.path = path
        self.problem = problem

    def __reduce__(
        self,
    ) -> tuple[type[UserError], tuple[object, str]]:  # travels back from pool workers
        return (UserError, (self.path, self.problem))


class Interrupted(KeyboardInterrupt):
    """Ctrl-C / SIGTERM during a run; ``log`` says how far it got (None if it could not be
    written)."""

    def __init__(self, log: object = None) -> None:
        super().__init__()
        self.log = log


class InternalError(Exception):
    """The run stopped on a bug outside per-file isolation; the traceback is in ``log``."""

    def __init__(self, message: str, log: object) -> None:
        super().__init__(message)
        self.log = log
