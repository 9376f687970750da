"""The LibCST migration engine.

``migrate_source(source, path)`` parses one file, applies every concern in a single pass and
returns the migrated bytes with the structured events describing each change. It never touches
the file system.
"""

from __future__ import annotations

import dataclasses

import libcst as cst
from libcst.metadata import MetadataWrapper

from ms_fmk_transplt.engine.amp import Amp
from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.device_api import DeviceApi
from ms_fmk_transplt.engine.device_strings import DeviceStrings
from ms_fmk_transplt.engine.distributed import Distributed
from ms_fmk_transplt.engine.distributed_mode import DistributedMode
from ms_fmk_transplt.engine.guards import refusal
from ms_fmk_transplt.engine.imports import Imports
from ms_fmk_transplt.engine.options import DEFAULT_OPTIONS, EngineOptions
from ms_fmk_transplt.engine.optout import ignored_lines, skips_file
from ms_fmk_transplt.engine.parse import parse, skipped
from ms_fmk_transplt.engine.prefilter import may_need_migration
from ms_fmk_transplt.engine.profiler import Profiler
from ms_fmk_transplt.engine.similar import Similar
from ms_fmk_transplt.engine.specify_device import SpecifyDevice
from ms_fmk_transplt.engine.tensor_methods import TensorMethods
from ms_fmk_transplt.engine.transformer import MigrationTransformer
from ms_fmk_transplt.engine.unsupported import Unsupported
from ms_fmk_transplt.engine.user_rules import UserRulesConcern
from ms_fmk_transplt.events import ChangeEvent, FileResult, FileStatus, Operation
from ms_fmk_transplt.tables import Tables, load_tables

# Order matters only where two concerns touch the same node: claims (amp, similar, specify
# device) before rewrites, unsupported after the rewrites (it reports what they left), and
# imports last, since it inserts ``import torch_npu`` once everything else has run.
CONCERNS = (
    Amp,
    DeviceApi,
    TensorMethods,
    DeviceStrings,
    Distributed,
    Profiler,
    Unsupported,
    Imports,
)

__all__ = ["CONCERNS", "EngineOptions", "concerns_for", "migrate_source"]


def concerns_for(options: EngineOptions) -> tuple[type[Concern], ...]:
    concerns: list[type[Concern]] = list(CONCERNS)
    if options.specify_device:
        concerns.insert(concerns.index(TensorMethods), SpecifyDevice)
    if options.similar:
        concerns.insert(0, Similar)
    if options.distributed_target is not None:
        concerns.insert(concerns.index(Imports), DistributedMode)
    return tuple(concerns)


def _run(module: cst.Module, ctx: MigrationContext, concerns) -> cst.Module:
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    ctx.bind(wrapper)
    return wrapper.module.visit(MigrationTransformer(ctx, concerns))


def migrate_source(
    source: bytes, path: str, tables: Tables | None = None, options: EngineOptions | None = None
) -> FileResult:
    tables = tables or load_tables()
    options = options or DEFAULT_OPTIONS
    if skips_file(source):
        return FileResult(path, FileStatus.UNCHANGED, source, analysed=False)
    if options.distributed_target is None and not may_need_migration(source, tables, options):
        return FileResult(path, FileStatus.UNCHANGED, source, analysed=False)
    refused = refusal(source, options.max_file_bytes)
    if refused is not None:
        return skipped(path, source, 1, tables.section("parse")["limit_rule"], refused, tables)
    module = parse(source, path, tables)
    if isinstance(module, FileResult):
        return module
    first: list[ChangeEvent] = []
    first_notices = []
    if options.user_rules is not None:  # user rules first: the built-in rules see their result
        user_ctx = MigrationContext(path, module, tables, options)
        module = _run(module, user_ctx, (UserRulesConcern,))
        first, first_notices = user_ctx.events, user_ctx.notices
    ctx = MigrationContext(path, module, tables, options)
    new_module = _run(module, ctx, concerns_for(options))
    ctx.notices[:0] = first_notices
    if not (first or ctx.events):
        return FileResult(path, FileStatus.UNCHANGED, source, notices=ctx.notices)
    output = _keep_final_cr(source, new_module.bytes)
    events = _with_output_lines(first + ctx.events, ctx.line_inserts, ctx.insert_order)
    ignored = ignored_lines(source)
    if ignored:
        output, events, kept = _apply_ignores(source, output, events, ignored, ctx.line_inserts)
        ctx.notices[:] = [n for n in ctx.notices if not _is_ignored(n.line, n.rule, ignored)]
        if not kept:
            return FileResult(path, FileStatus.UNCHANGED, source, notices=ctx.notices)
    cst.parse_module(output)  # the migrated file must parse: fail loudly here, never write it
    events.sort(key=lambda e: (e.out_start_line, e.start_line, e.rule))
    notices = [
        dataclasses.replace(
            n,
            out_line=_shift(n.line, ctx.line_inserts),
            out_end_line=_shift(max(n.line, n.end_line), ctx.line_inserts),
        )
        for n in ctx.notices
    ]
    return FileResult(path, FileStatus.CHANGED, output, events=events, notices=notices)


def _keep_final_cr(source: bytes, output: bytes) -> bytes:
    """LibCST drops the final newline of a file whose lines end with a bare CR (old Mac
    style): ``parse_module(b"x = 1\\r").bytes == b"x = 1"``. Found by the generated-program
    tests; give the byte back."""
    if source.endswith(b"\r") and not output.endswith((b"\r", b"\n")):
        return output + b"\r"
    return output


def _is_ignored(line: int, rule: str, ignored: dict[int, frozenset[str] | None]) -> bool:
    if line not in ignored:
        return False
    rules = ignored[line]
    return rules is None or rule in rules


def _apply_ignores(source, output, events, ignored, inserts):
    """Give `# msft: ignore` lines back their original text and drop their rows."""
    src_lines = source.splitlines(keepends=True)
    out_lines = output.splitlines(keepends=True)
    by_line: dict[int, list[ChangeEvent]] = {}
    for e in events:
        if e.operation != Operation.INSERT:
            for line in range(e.start_line, e.end_line + 1):
                by_line.setdefault(line, []).append(e)
    dropped: set[int] = set()
    for line in ignored:
        on_line = by_line.get(line, [])
        if on_line and all(_is_ignored(line, e.rule, ignored) for e in on_line):
            out_lines[_shift(line, inserts) - 1] = src_lines[line - 1]
            dropped.update(id(e) for e in on_line)
    events = [e for e in events if id(e) not in dropped]
    kept = [e for e in events if e.operation != Operation.INSERT]
    return b"".join(out_lines), events, kept


def _shift(line: int, inserts: list[tuple[int, int]]) -> int:
    """Line number in the migrated file of an input line, given the inserted lines."""
    return line + sum(count for first, count in inserts if line >= first)


def _with_output_lines(
    events: list[ChangeEvent],
    inserts: list[tuple[int, int]],
    order: list[tuple[int, int, int]],
) -> list[ChangeEvent]:
    out = []
    queue = list(zip(inserts, order))
    for event in events:
        if event.operation == Operation.INSERT:
            (anchor, count), key = queue.pop(0)
            start = anchor + sum(c for (_, c), k in zip(inserts, order) if k < key)
            out.append(
                dataclasses.replace(event, out_start_line=start, out_end_line=start + count - 1)
            )
        else:
            out.append(
                dataclasses.replace(
                    event,
                    out_start_line=_shift(event.start_line, inserts),
                    out_end_line=_shift(event.end_line, inserts),
                )
            )
    return out
