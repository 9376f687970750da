"""Span pass: a test skipped without CUDA stays skipped on the NPU when what it tests is
CUDA-only code (part of rule cuda_only.guard, declared in cuda_only_spans.py).

``@unittest.skipUnless(torch.cuda.is_available(), "the op is CUDA-only")`` in front of a test
of a Triton kernel: migrated to ``torch.npu.is_available()``, the test would run on the NPU and
fail on code the tool itself keeps CUDA-only. When the decorated test (or test class) uses
CUDA-only code -- of its file, or imported from a module of the project that defines it
(project_facts.py) -- the condition stays on ``torch.cuda``, with a caveat row.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from ms_fmk_transplt.engine.rules.cuda_only.cuda_only_hints import hinted
from ms_fmk_transplt.engine.rules.cuda_only.cuda_only_spans import CATEGORY, RULE, guarded_code
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.tables.unsupported_table import Entry

SKIPPERS = frozenset({"skipIf", "skipUnless", "skipif"})  # unittest, pytest.mark
SKIP = Entry(
    "cuda_only_test",
    CATEGORY,
    "caveat",
    "test skip condition kept on torch.cuda: the test exercises CUDA-only code, so on the NPU it "
    "stays skipped; port that code to the NPU (Ascend C, triton-ascend) to test it there",
)


def skip_message(what: str) -> str:
    return f"test skip condition kept on torch.cuda: the test exercises CUDA-only code ({what})"


def skip_condition(call: ast.Call, last_name: Callable[[ast.expr], str | None]) -> ast.expr | None:
    """The condition of a skip decorator (its first argument), else None."""
    if last_name(call.func) not in SKIPPERS or not call.args:
        return None
    return call.args[0]


def asks_cuda(nodes: Sequence[ast.AST], qname: Callable[[ast.AST], str | None]) -> bool:
    """Whether an attribute or a call among ``nodes`` names something of ``torch.cuda``."""
    return any(
        isinstance(n, (ast.Attribute, ast.Call))
        and (qname(n.func if isinstance(n, ast.Call) else n) or "").startswith("torch.cuda.")
        for n in nodes
    )


class SkipGuardSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        self.active = b"skip" in ctx.source.data and hinted(
            ctx.source.data, ctx.tables.unsupported, ctx.options.project
        )

    def visit_Call(self, node: ast.Call) -> None:
        unit = self.ctx.unit
        assert unit is not None  # set while a unit is walked
        if not self.active or not unit.header:
            return
        test = unit.node
        if not isinstance(test, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return
        if not any(d is node for d in test.decorator_list):
            return
        condition = skip_condition(node, self.ctx.last_name)
        if condition is None or self.ctx.is_claimed(condition):
            return
        nodes = list(ast.walk(condition))
        if not asks_cuda(nodes, self.ctx.qname):
            return
        what = guarded_code(test.body, self.ctx.source.data, self.tables.unsupported, self.ctx)
        if what is None:
            return
        for n in nodes:
            self.ctx.claim(n)
        lines = self.ctx.lines(condition)
        self.ctx.unsupported(lines, test.name, SKIP, skip_message(what), RULE)
