"""What a numeric option or pyproject key accepts (``-j``/``jobs``, ``--max-file-size``,
``--file-timeout``): a finite number within its bounds (``BOUNDS``). The command line checks its
values with the click type ``Bounded``, the pyproject.toml table with ``bounded``: one error line
naming the option (or key) and what it accepts, exit 2."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from ms_fmk_transplt.errors import fail
from ms_fmk_transplt.safe_names import shown

MAX_JOBS = 64  # -j / jobs: worker processes (0: one per core)
MAX_FILE_MIB = 256  # --max-file-size / max-file-size: a hard ceiling, whatever sets it
MAX_FILE_SECONDS = 86_400  # --file-timeout: one day (0: no bound)


@dataclass(frozen=True)
class Bound:
    """What a numeric option or key accepts: a finite number from ``low`` to ``high``."""

    whole: bool  # an int (a float otherwise)
    low: float
    high: float
    expected: str  # as the error line says it


BOUNDS = {
    "jobs": Bound(True, 0, MAX_JOBS, f"a whole number from 0 to {MAX_JOBS} (0: one per core)"),
    "mib": Bound(False, 0.001, MAX_FILE_MIB, f"a number of MiB from 0.001 to {MAX_FILE_MIB}"),
    "seconds": Bound(
        False, 0, MAX_FILE_SECONDS, f"seconds from 0 to {MAX_FILE_SECONDS} (0: no bound)"
    ),
}


def bounded(kind: str, value: object) -> int | float | None:
    """``value`` (a number, or the text of one) as a number within ``BOUNDS[kind]``; None when
    it is not one (not a number, not finite, out of the bounds)."""
    bound = BOUNDS[kind]
    if isinstance(value, str):
        try:
            value = int(value) if bound.whole else float(value)
        except ValueError:  # also an int of more digits than Python converts
            return None
    if isinstance(value, bool) or not isinstance(value, int if bound.whole else (int, float)):
        return None
    if not bound.low <= value <= bound.high:  # nan, inf and 1e308 too
        return None
    return value if bound.whole else float(value)


if TYPE_CHECKING:  # generic in click's newer stubs, not at run time with click 8.1
    _ParamType = click.ParamType[Any]
else:
    _ParamType = click.ParamType


class Bounded(_ParamType):
    """A numeric option checked against ``BOUNDS[kind]``: a bad value is one error line naming
    the option and what it accepts (exit 2), not click's usage text."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.name = "integer" if BOUNDS[kind].whole else "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):  # the default
            return value
        number = bounded(self.kind, value)
        if number is not None:
            return number
        given = shown(value) if len(value) <= 40 else f"{shown(value[:40])}..."
        problem = f"expected {BOUNDS[self.kind].expected}, got {given or repr(value)}"
        if ctx is not None and ctx.resilient_parsing:  # shell completion: no error line
            self.fail(problem, param, ctx)
        flags = "/".join(param.opts) if param is not None else self.kind
        fail(f"{flags}: {problem}")
