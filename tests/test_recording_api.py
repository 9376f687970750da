"""The span pass and the LibCST stages record through one API (engine/recorder.py): neither
context declares record / warn / unsupported of its own, and a row recorded at a node's lines
is the same row whichever context records it."""

from __future__ import annotations

import ast

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper

from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.recorder import Recorder
from ms_fmk_transplt.engine.rules import registry
from ms_fmk_transplt.engine.spans.source_text import SourceText
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.events import Operation, Severity
from ms_fmk_transplt.tables import load_tables
from ms_fmk_transplt.tables.unsupported_table import Entry

SOURCE = b"import torch\nx = torch.cuda.mystery(\n    1,\n)\n"
API = ("record", "record_insert", "warn", "unsupported")


@pytest.mark.parametrize("context", [SpanContext, MigrationContext])
@pytest.mark.parametrize("name", API)
def test_the_contexts_declare_no_recording_method_of_their_own(context: type, name: str) -> None:
    assert getattr(context, name) is getattr(Recorder, name)


def _span_context() -> tuple[SpanContext, tuple[int, int]]:
    tree = ast.parse(SOURCE)
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    ctx = SpanContext("m.py", load_tables(), None, SourceText(SOURCE), imports)
    ctx.open_work_rule = registry.open_work_rule  # (as the span pass hands it in)
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call))
    return ctx, ctx.lines(call)


def _cst_context() -> tuple[MigrationContext, tuple[int, int]]:
    module = cst.parse_module(SOURCE)
    ctx = MigrationContext("m.py", module, load_tables())
    ctx.open_work_rule = registry.open_work_rule  # (as engine/stages.py hands it in)
    ctx.bind(MetadataWrapper(module, unsafe_skip_copy=True))
    found: list[cst.Call] = []

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            found.append(node)

    module.visit(Calls())
    return ctx, ctx.lines(found[0])


def _rows(ctx: Recorder, lines: tuple[int, int]) -> tuple[list[object], list[object]]:
    entry = Entry("torch.cuda.mystery", "cuda_only_api", "manual", "do it by hand")
    ctx.record(lines, "tensor_methods.cuda_call", "m", "a", "b", Operation.MODIFY, False)
    ctx.warn(lines, "engine.unmodelled", "w", "api", Severity.INFO)
    ctx.unsupported(lines, "torch.cuda.mystery", entry)
    return list(ctx.events), list(ctx.notices)


def test_a_node_s_rows_are_the_same_in_both_contexts() -> None:
    span, span_lines = _span_context()
    libcst, cst_lines = _cst_context()
    assert span_lines == cst_lines == (2, 4)
    events, notices = _rows(span, span_lines)
    assert (events, notices) == _rows(libcst, cst_lines)
    (event,) = events
    assert (event.start_line, event.end_line, event.before, event.after) == (2, 4, "a", "b")
    assert not span.needs_torch_npu  # needs_torch_npu=False
    warned, open_work = notices
    assert (warned.line, warned.end_line, warned.severity) == (2, 0, Severity.INFO)  # first line
    assert (open_work.line, open_work.end_line, open_work.tip) == (2, 4, "do it by hand")
    category = span.tables.unsupported.categories["cuda_only_api"]
    assert open_work.message == f"torch.cuda.mystery: {category}; left unchanged"


def test_an_event_placed_at_its_output_lines_is_the_event_with_those_lines() -> None:
    """migrate.py places each event at its output lines from a copy of its fields (faster than
    dataclasses.replace): the same event, the original left alone."""
    import dataclasses

    from ms_fmk_transplt.engine.migrate import _placed
    from ms_fmk_transplt.events import ChangeEvent

    rule = "tensor_methods.cuda_call"
    event = ChangeEvent("a.py", 3, 4, rule, Operation.MODIFY, "m", "b", "a", 7, 8, caveat=True)
    placed = _placed(event, 5, 6)
    assert placed == dataclasses.replace(event, out_start_line=5, out_end_line=6)
    assert (placed.out_start_line, placed.out_end_line, placed.caveat) == (5, 6, True)
    assert (event.out_start_line, event.out_end_line) == (7, 8)
