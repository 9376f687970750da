"""With ``--assessed``: what ``kit assess`` saw the training steps run (engine/assess_facts.py)
becomes rows of unsupported_op at the project lines that reached it, judged for the migration's
own target version (``-v``) with the same verdict the kit's runtime gives
(kits/msft_assess_report.npu_verdict on tables/assess_support.py's view of the table):

* assess.unsupported: an API the target does not support, run during the steps;
* assess.restricted: a restricted API whose recorded arguments or dtypes hit the restriction;
* assess.dynamic_shape: an API whose shapes changed between steps (a caveat: each new shape
  compiles on the NPU).

An API the span pass already reported in the file (operator_support.*: a call, a module's
construction) is not repeated: that row gains what the run saw (``fold``)."""

from __future__ import annotations

import dataclasses

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.assess_facts import AssessedApi, AssessFacts
from ms_fmk_transplt.engine.rules.family_spec import Finishing, Folding
from ms_fmk_transplt.engine.spans.module_facts import ModuleFacts
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.events import Notice
from ms_fmk_transplt.kits.msft_assess_report import flagged, npu_verdict
from ms_fmk_transplt.tables.assess_support import support_entry
from ms_fmk_transplt.tables.unsupported_table import Entry

_FROM = (
    " From the ops.csv of a run of `kit assess` (`--assessed`), judged again for the "
    "migration's `-v` target; the row is at the project line that reached the API during the "
    "recorded training steps (a library's call is named)."
)
UNSUPPORTED = declare(
    "assess.unsupported",
    "An API the target torch_npu does not support ran during the assessed training steps",
    "The recording saw the API run, whether the project's code names it or a library (or "
    "torch's own Python: an optimizer, a module) calls it; the target version's API-support "
    "list marks it unsupported." + _FROM,
    kind=OPEN_WORK,
    option="--assessed",
)
RESTRICTED = declare(
    "assess.restricted",
    "A restricted API ran with arguments or dtypes its restriction names",
    "The recorded keyword arguments (those given, not the defaults; a module's constructor "
    "arguments) or the dtypes of its tensor arguments hit the restriction the target version "
    "documents (`F.interpolate(scale_factor=...)`, a float64 input where the list says fp16 "
    "and fp32)." + _FROM,
    kind=OPEN_WORK,
    option="--assessed",
)
DYNAMIC = declare(
    "assess.dynamic_shape",
    "An API's shapes changed between the assessed training steps",
    "The NPU compiles an operator for each new input shape: shapes that change from step to "
    "step (a growing batch, a boolean mask, the last short batch) recompile and run slowly. "
    "Pad or bucket the inputs to fixed sizes, drop the last short batch, or use the prebuilt "
    "binary kernels (`torch.npu.set_compile_mode(jit_compile=False)`)." + _FROM,
    kind=OPEN_WORK,
    option="--assessed",
)
RULES = (UNSUPPORTED, RESTRICTED, DYNAMIC)
DYNAMIC_TIP = (
    "pad or bucket the inputs to fixed sizes (drop_last=True for the last short batch), or "
    "call torch.npu.set_compile_mode(jit_compile=False) to use the prebuilt binary kernels"
)
_SEEN = "; kit assess saw it run at "  # where a span-pass row gains the run's evidence


def facts_of(ctx: SpanContext) -> AssessFacts | None:
    project = ctx.options.project
    return project.assessed if project is not None else None


def finish(ctx: SpanContext, facts: ModuleFacts, done: Finishing) -> None:
    """The file's rows (Family.finish): one per API the recording saw its lines reach that
    the target does not support or restricts and was hit; one per line whose APIs' shapes
    changed between steps."""
    assessed = facts_of(ctx)
    apis = assessed.files.get(ctx.path, ()) if assessed is not None else ()
    last = done.source.count(b"\n") + 1
    dynamic: dict[int, list[AssessedApi]] = {}
    for api in apis:
        if api.line <= last:
            _support_row(ctx, api)
            if api.dynamic:
                dynamic.setdefault(api.line, []).append(api)
    for line, group in sorted(dynamic.items()):
        first = group[0]
        others = f" (and {', '.join(a.api for a in group[1:])})" if group[1:] else ""
        message = (
            f"{first.api}{others}: shapes change between steps: {first.shapes}; {_seen(first)}"
        )
        tip = f"kit assess: {first.api}{others}: {first.shapes}; {DYNAMIC_TIP}"
        row = Entry(first.api, "dynamic_shape", "caveat", tip)
        ctx.unsupported((line, line), first.api, row, message, DYNAMIC)


def _support_row(ctx: SpanContext, api: AssessedApi) -> None:
    table = ctx.tables.operators
    verdict = npu_verdict(set(api.dtypes), set(api.arguments), support_entry(table, api.api))
    if not flagged(verdict):
        return
    version = f"torch_npu {table.document_version or table.target}'s documentation"
    entry = table.entry(api.api)
    tip = f"kit assess: {_seen(api)}; {entry.tip if entry is not None else verdict}"
    if verdict == "unsupported":
        rule, category = UNSUPPORTED, "unsupported_op"
        message = f"{api.api}: not supported on the NPU by {version}; {_seen(api)}"
    else:
        rule, category = RESTRICTED, "restricted_op"
        hit = verdict.split("(hit: ", 1)[1].split(")", 1)[0]
        message = f"{api.api}: restricted on the NPU by {version}, hit by {hit}; {_seen(api)}"
    row = Entry(api.api, category, "manual", tip)
    ctx.unsupported((api.line, api.line), api.api, row, message, rule)


def _seen(api: AssessedApi) -> str:
    through = f" through {api.library}" if api.library else ""
    what = [f"dtypes {', '.join(sorted(api.dtypes))}"] if api.dtypes else []
    what += [f"arguments {', '.join(sorted(api.arguments))}"] if api.arguments else []
    times = "time" if api.calls == 1 else "times"
    shown = f" ({'; '.join(what)})" if what else ""
    return f"called {api.calls} {times}{through} in the assessed steps{shown}"


def fold(notices: list[Notice], done: Folding) -> list[Notice]:
    """A span-pass row of the same API in the file (operator_support.*: the call, or the
    module's construction) gains what the run saw; ours is dropped (Family.fold)."""
    ours = {n.api: n for n in notices if n.rule in (UNSUPPORTED, RESTRICTED)}
    if not ours:
        return notices
    merged: set[int] = set()
    out: list[Notice] = []
    for row in notices:
        mine = ours.get(row.api)
        if mine is not None and row.rule.startswith("operator_support.") and id(mine) not in merged:
            seen = mine.message.split("; ", 1)[1]
            if ", hit by " in mine.message:  # (what the restriction was hit by)
                hit = mine.message.split(", hit by ", 1)[1].split("; ", 1)[0]
                seen = f"hit by {hit}; {seen}"
            line = mine.lines(done.migrated)[0]
            message = f"{row.message}{_SEEN}line {line}: {seen}"
            out.append(dataclasses.replace(row, message=message))
            merged.add(id(mine))
        else:
            out.append(row)
    return [row for row in out if id(row) not in merged]
