"""Span pass: ``torch.cuda.<X>`` -> ``torch.npu.<X>`` in expressions (rules device_api.*,
amp.cuda_amp); see engine/device_api.py for the rule."""

from __future__ import annotations

import ast

from ms_fmk_transplt.engine.spans.base import SpanConcern

CUDA = "torch.cuda"


class DeviceApiSpans(SpanConcern):
    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # id(node that denotes torch.cuda) -> outermost attribute chain above it
        self.chain_of: dict[int, ast.Attribute] = {}
        # id(outermost chain node) -> (cuda name, npu name, rule, snippet before) to record
        self.pending: dict[int, tuple[str, str, str, str]] = {}

    def _cuda_base(self, node: ast.Attribute) -> ast.AST | None:
        cur: ast.AST = node.value
        while True:
            if self.ctx.qname(cur) == CUDA:
                return cur
            if isinstance(cur, ast.Attribute):
                cur = cur.value
            else:
                return None

    def _may_be_cuda(self, node: ast.Attribute) -> bool:
        names = self.ctx.names_in(node)
        if "cuda" in names:
            return True
        bound = self.ctx.import_bound.get(names[-1]) if names else None
        return bool(bound) and "cuda" in bound  # an alias such as `import torch.cuda as tc`

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if self.ctx.is_claimed(node) or not self._may_be_cuda(node):
            return
        qn = self.ctx.qname(node)
        if not qn or not qn.startswith(CUDA + "."):
            return
        base = self._cuda_base(node)
        if base is not None and id(base) not in self.chain_of:
            self.chain_of[id(base)] = node

    def _full_name(self, original: ast.AST) -> tuple[ast.AST, str]:
        outer = self.chain_of.get(id(original))
        if outer is None:
            return original, CUDA
        return outer, self.ctx.qname(outer) or CUDA

    def leave_Name(self, node: ast.Name) -> None:
        if self.ctx.is_claimed(node):
            return
        if id(node) in self.chain_of and self.ctx.qname(node) == CUDA:
            outer, full = self._full_name(node)
            if self.tables.lookup_cuda(full) is None:
                self.ctx.no_npu_counterpart_at(self.ctx.lines(outer), full)

    def leave_Attribute(self, node: ast.Attribute) -> None:
        pending = self.pending.pop(id(node), None)
        if pending is not None:
            cuda_name, npu_name, rule, before = pending
            self.ctx.record(
                self.ctx.lines(node),
                rule,
                f"{cuda_name} -> {npu_name}",
                before,
                self.ctx.snippet(node),
            )
        if node.attr != "cuda" or self.ctx.qname(node) != CUDA:
            return
        if self.ctx.is_claimed(node):
            return
        outer, full = self._full_name(node)
        mapped = self.tables.lookup_cuda(full)
        if mapped is None:
            self.ctx.no_npu_counterpart_at(self.ctx.lines(outer), full)
            return
        npu_name, rule = mapped
        if outer is node:
            before = self.ctx.snippet(node, updated=False)
            self.ctx.rename_attr(node, "npu")
            self.ctx.record(
                self.ctx.lines(node), rule, f"{full} -> {npu_name}", before, self.ctx.snippet(node)
            )
        else:
            before = self.ctx.snippet(outer, updated=False)
            self.ctx.rename_attr(node, "npu")
            self.pending[id(outer)] = (full, npu_name, rule, before)
