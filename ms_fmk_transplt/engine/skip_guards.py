"""A test skipped without CUDA stays skipped on the NPU when it tests CUDA-only code (part of
rule cuda_only.guard, explained in engine/spans/skip_guards_spans.py, the span pass's
counterpart)."""

from __future__ import annotations

import ast

import libcst as cst

from ms_fmk_transplt.engine.base import Concern, subtree
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.cuda_only import statements_of
from ms_fmk_transplt.engine.spans.cuda_only_hints import hinted
from ms_fmk_transplt.engine.spans.cuda_only_spans import RULE, guarded_code
from ms_fmk_transplt.engine.spans.skip_guards_spans import (
    SKIP,
    asks_cuda,
    skip_condition,
    skip_message,
)


def _last_name(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return node.value if isinstance(node, cst.Name) else None


class SkipGuards(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        self.active = b"skip" in ctx.source and hinted(
            ctx.source, ctx.tables.unsupported, ctx.options.project
        )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._test(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._test(node)

    def _test(self, node: cst.FunctionDef | cst.ClassDef) -> None:
        if not self.active:
            return
        body: ast.AST | None = None
        for decorator in node.decorators:
            call = decorator.decorator
            if not isinstance(call, cst.Call):
                continue
            condition = skip_condition(call, _last_name)
            if condition is None or self.ctx.is_claimed(condition):
                continue
            nodes = subtree(condition)
            if not asks_cuda(nodes, self.ctx.qname):
                continue
            body = body or statements_of(node.body)
            if body is None:
                return
            table = self.tables.unsupported
            what = guarded_code([body], self.ctx.source, table, self.ctx)
            if what is None:
                return
            for n in nodes:
                self.ctx.claim(n)
            self.ctx.unsupported(condition, node.name.value, SKIP, skip_message(what), RULE)
