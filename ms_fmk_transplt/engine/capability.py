"""CUDA capability probes stay on ``torch.cuda`` (rule device_api.capability_probe, declared and
explained in engine/spans/capability_spans.py, the span pass's counterpart)."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from ms_fmk_transplt.engine.base import Concern, subtree
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.spans.capability_spans import (
    RULE,
    SELECTOR,
    accelerator_choice,
    guard_of_probes,
    hinted,
    keep_patch,
    keep_probes,
)
from ms_fmk_transplt.engine.spans.npu_siblings import ACCELERATOR_LINE
from ms_fmk_transplt.engine.spans.probe_shapes import (
    PROBE_FIELDS,
    exits_early,
    negates_available,
    probe_class_lines,
    probed_variables,
)


class CapabilityProbes(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        self.active_accelerator = b"ccelerator" in ctx.source and bool(
            ACCELERATOR_LINE.search(ctx.source)
        )
        self.active = hinted(ctx.source) or self.active_accelerator
        self.guarded: set[int] = set()
        self.if_bodies: dict[int, list[cst.CSTNode]] = {}  # id(if test) -> what it guards
        self.variables = probed_variables(ctx.source) if self.active else frozenset()
        self.probe_classes = probe_class_lines(ctx.source) if self.active else frozenset()

    def visit_If(self, node: cst.If) -> None:
        if self.active and id(_test_of(node)) not in self.if_bodies:
            self.if_bodies[id(_test_of(node))] = subtree(node.body)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._early_exits(node.body)

    def visit_Module(self, node: cst.Module) -> None:
        self._early_exits(node.body)

    def _early_exits(self, block: Sequence[cst.BaseStatement]) -> None:
        """``if not torch.cuda.is_available(): return`` guards the statements after it."""
        if not self.active:
            return
        for i, stmt in enumerate(block):
            if not isinstance(stmt, cst.If) or not exits_early(subtree(stmt.body)):
                continue
            if negates_available(subtree(stmt.test), self.ctx.qname):
                after = [n for later in block[i + 1 :] for n in subtree(later)]
                self.if_bodies[id(_test_of(stmt))] = after

    def visit_Assign(self, node: cst.Assign) -> None:
        if self.variables and not self.ctx.is_claimed(node):  # props = get_device_properties(d)
            keep_probes(self.ctx, subtree(node), lambda call: call, self.guarded, self.variables)
        if self.active_accelerator:
            targets = [
                n.value if isinstance(n, cst.Name) else n.attr.value
                for t in node.targets
                for n in subtree(t.target)
                if isinstance(n, (cst.Name, cst.Attribute))
            ]
            accelerator_choice(self.ctx, targets, subtree(node.value))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "is_cuda" and self.probe_classes:
            if self.ctx.lines(node)[0] in self.probe_classes:
                self.ctx.claim(node)
                message = "x.is_cuda kept: it selects the setup of a kept capability probe"
                self.ctx.unsupported(node, ".is_cuda", SELECTOR, message, RULE)
                return
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
            guard_of_probes(self.ctx, subtree(node), body, self.guarded, self.variables)
        nodes = subtree(node)
        if isinstance(node, cst.Call) and keep_patch(
            self.ctx, node, nodes, lambda call: call, self.ctx.source
        ):
            return
        keep_probes(self.ctx, nodes, lambda call: call, self.guarded, self.variables)


def _test_of(node: cst.If) -> cst.BaseExpression:
    """An if's test, under a ``not`` (``if not torch.cuda.is_available(): return``)."""
    test = node.test
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.expression
    return test
