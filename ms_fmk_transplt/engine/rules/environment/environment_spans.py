"""Span pass: CUDA/NCCL environment keys -> Ascend ones (rule environment.ascend_variable,
declared in environment_keys.py)."""

from __future__ import annotations

import ast

from ms_fmk_transplt.engine.rules.environment.environment_keys import (
    ENVIRON,
    KEY_CALLS,
    RULE,
    message,
)
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext, StringPart

KEY_LEAVES = frozenset(name.rsplit(".", 1)[1] for name in KEY_CALLS)


class EnvironmentSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        self.names = self.tables.advice.exact_environment
        self.keys: set[int] = set()

    def _mark(self, node: ast.AST | None) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            token = self.ctx.string_token(node)
            if token is not None and not token.is_bytes and token.body in self.names:
                self.keys.add(id(node))
                self.ctx.claim(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if self.ctx.qname(node.value) == ENVIRON:
            self._mark(node.slice)

    def visit_Compare(self, node: ast.Compare) -> None:  # "CUDA_..." in os.environ
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            if self.ctx.qname(node.comparators[0]) == ENVIRON:
                self._mark(node.left)

    def visit_Call(self, node: ast.Call) -> None:
        if node.args and not isinstance(node.args[0], ast.Starred):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr not in KEY_LEAVES:
                return  # (the name of ``a.b`` ends in ``.b``: spares resolving every call)
            if self.ctx.qname(func) in KEY_CALLS:
                self._mark(node.args[0])

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg == "env" and isinstance(node.value, ast.Dict):
            for key in node.value.keys:
                self._mark(key)

    def leave_SimpleString(self, part: StringPart) -> None:
        if not part.whole or id(part.node) not in self.keys:
            return
        body = self.ctx.body(part)
        if body is None or body not in self.names:
            return
        entry = self.names[body]
        before = self.ctx.token_text(part)
        start = part.token.body_start
        self.ctx.replace(start, start + len(body), entry.ascend, expect=body)
        text = message(body, entry.ascend, entry.caveat)
        self.ctx.record(
            part.lines, RULE, text, before, self.ctx.token_text(part), needs_torch_npu=False
        )
