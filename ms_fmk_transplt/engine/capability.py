"""CUDA capability probes stay on ``torch.cuda`` (rule device_api.capability_probe, declared and
explained in engine/spans/capability_spans.py, the span pass's counterpart)."""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.spans.capability_spans import hinted, keep_probes


def _subtree(node: cst.CSTNode) -> list[cst.CSTNode]:
    nodes: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            nodes.append(n)
            return True

    node.visit(Collect())
    return nodes


class CapabilityProbes(Concern):
    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.active = hinted(ctx.source)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self._keep(node)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._keep(node)

    def visit_Call(self, node: cst.Call) -> None:
        self._keep(node)

    def _keep(self, node: cst.CSTNode) -> None:
        if self.active and not self.ctx.is_claimed(node):
            keep_probes(self.ctx, _subtree(node), lambda call: call)
