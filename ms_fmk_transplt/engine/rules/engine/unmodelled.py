"""A statement the span pass meets code in that it does not model is left as written, with a row
saying so (rule engine.unmodelled), instead of being migrated wrongly."""

from __future__ import annotations

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.engine.spans.units import Unit
from ms_fmk_transplt.events import Notice, Severity

UNMODELLED = declare(
    "engine.unmodelled",
    "a statement holding code the engine does not model: left as written, one row",
    "The engine rewrites code by exact edits of the statements that name CUDA. In the rare "
    "statement whose layout it does not model (e.g. a `with` item in parentheses of its own, "
    "`with (profile(use_cuda=True)) as p:`, or `use_cuda=` given a conditional expression), it "
    "changes nothing rather than risk a wrong edit: the statement (for a compound statement, "
    "its header: the test of an `if`, the items of a `with`, a function's decorators and "
    "defaults) is left as written, and a `manual` row on its line says why. The rest of the "
    "file is migrated as usual. Migrate the statement by hand, then run the tool again.",
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
