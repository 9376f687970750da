"""CUDA capability probes stay on ``torch.cuda`` (rule device_api.capability_probe, declared and
explained in engine/spans/capability_spans.py, the span pass's counterpart)."""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.engine.base import Concern, subtree
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.spans.capability_spans import (
    PROBE_FIELDS,
    accelerator_choice,
    guard_of_probes,
    hinted,
    keep_patch,
    keep_probes,
)
from ms_fmk_transplt.engine.spans.npu_siblings import ACCELERATOR_LINE


class CapabilityProbes(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        self.active_accelerator = b"ccelerator" in ctx.source and bool(
            ACCELERATOR_LINE.search(ctx.source)
        )
        self.active = hinted(ctx.source) or self.active_accelerator
        self.guarded: set[int] = set()
        self.if_bodies: dict[int, cst.BaseSuite] = {}  # id(if test) -> its body

    def visit_If(self, node: cst.If) -> None:
        if self.active:
            self.if_bodies[id(node.test)] = node.body

    def visit_Assign(self, node: cst.Assign) -> None:
        if self.active_accelerator:
            targets = [
                n.value if isinstance(n, cst.Name) else n.attr.value
                for t in node.targets
                for n in subtree(t.target)
                if isinstance(n, (cst.Name, cst.Attribute))
            ]
            accelerator_choice(self.ctx, targets, subtree(node.value))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        # sm = get_device_properties(d).multi_processor_count; if torch.version.hip: ...
        if node.attr.value in PROBE_FIELDS or node.attr.value == "hip":
            self._keep(node)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self._keep(node)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._keep(node)

    def visit_Call(self, node: cst.Call) -> None:
        self._keep(node)

    def _keep(self, node: cst.CSTNode) -> None:
        if not self.active or self.ctx.is_claimed(node):
            return
        body = self.if_bodies.get(id(node))
        if body is not None:  # the test of an if (as the span pass sees it)
            guard_of_probes(self.ctx, subtree(node), subtree(body), self.guarded)
        nodes = subtree(node)
        if isinstance(node, cst.Call) and keep_patch(
            self.ctx, node, nodes, lambda call: call, self.ctx.source
        ):
            return
        keep_probes(self.ctx, nodes, lambda call: call, self.guarded)
