"""A statement the span pass meets code in that it does not model is left as written, with a row
saying so (rule engine.unmodelled), instead of being migrated wrongly."""

from __future__ import annotations

from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.engine.spans.units import Unit
from ms_fmk_transplt.events import Notice, Severity
from ms_fmk_transplt.rule_catalog import OPEN_WORK, declare

UNMODELLED = declare(
    "engine.unmodelled",
    "a statement holding code the engine does not model: left as written, one row",
    "The engine rewrites code by exact edits of the statements that name CUDA. In the rare "
    'statement whose layout it does not model (e.g. a device f-string such as `f"cuda:{i}"` '
    "joined to other string literals), it changes nothing rather than risk a wrong edit: the "
    "whole statement (for a compound statement, its header: the test of an `if`, a function's "
    "decorators and defaults) is left as written, and a `manual` row on its line says why. The "
    "rest of the file is migrated as usual. Migrate the statement by hand (or write it so that "
    "each string is one literal), then run the tool again.",
    kind=OPEN_WORK,
)


def left_as_written(ctx: SpanContext, unit: Unit, reason: str) -> None:
    """The row of a unit whose walk was rolled back (see SpanContext.unit_rollback)."""
    first, last = unit.lines
    ctx.notices.append(
        Notice.of_entry(
            (ctx.path, first),
            UNMODELLED,
            Severity.WARNING,
            f"statement left as written: the engine does not model {reason}",
            ctx.tables.unsupported.unmodelled,
            end_line=last,
        )
    )
