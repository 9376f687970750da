"""Span pass: ``"nccl"`` -> ``"hccl"``, ``"cpu:gloo,cuda:nccl"`` -> ``"cpu:gloo,npu:hccl"``,
``Backend.NCCL`` -> ``Backend.HCCL`` (rules distributed.*); see engine/distributed.py."""

from __future__ import annotations

import ast

from ms_fmk_transplt.engine.backends import compound
from ms_fmk_transplt.engine.spans.base import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import StringPart


class DistributedSpans(SpanConcern):
    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        table = self.tables.distributed
        self.backend_rule, self.backends = table.backend_rule, table.backends
        self.enum_rule, self.enums, self.enum_leaves = (
            table.enum_rule,
            table.enums,
            table.enum_leaves,
        )
        self.compound_rule, self.pairs = table.compound_rule, table.pairs

    def _rewrite(self, part: StringPart, body: str, new_body: str, rule: str) -> None:
        before = self.ctx.token_text(part)
        token = part.token
        self.ctx.replace(token.body_start, token.body_end, new_body, expect=body)
        self.ctx.record(
            part.lines, rule, f"backend '{body}' -> '{new_body}'", before, self.ctx.token_text(part)
        )

    def leave_SimpleString(self, part: StringPart) -> None:
        if part.docstring:
            return
        body = self.ctx.body(part)
        if body is not None and body not in self.backends and ":" in body:
            value = compound(body, self.pairs)
            if value is not None:
                self._rewrite(part, body, value, self.compound_rule)
            return
        if body is None or body not in self.backends:
            return
        self._rewrite(part, body, self.backends[body], self.backend_rule)

    def leave_Attribute(self, node: ast.Attribute) -> None:
        if node.attr not in self.enum_leaves:
            return
        qn = self.ctx.qname(node)
        if qn not in self.enums:
            return
        before = self.ctx.snippet(node)
        self.ctx.rename_attr(node, self.enums[qn])
        self.ctx.record(
            self.ctx.lines(node),
            self.enum_rule,
            f"{qn} -> {qn.rsplit('.', 1)[0]}.{self.enums[qn]}",
            before,
            self.ctx.snippet(node),
        )
