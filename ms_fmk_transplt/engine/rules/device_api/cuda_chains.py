"""Which attribute chains reach ``torch.cuda`` (rules device_api.*): the base of the span
concern that rewrites them (engine/rules/device_api/device_api_spans.py). The context
(``self.ctx``) resolves names through imports.
"""

from __future__ import annotations

import ast

from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext

CUDA = "torch.cuda"


class CudaChains(SpanConcern):
    """Remembers, for each node that denotes ``torch.cuda``, the outermost attribute chain above
    it that names a ``torch.cuda.<X>`` (``torch.cuda.amp.autocast`` for ``torch.cuda``)."""

    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        # id(node that denotes torch.cuda) -> outermost attribute chain above it
        self.chain_of: dict[int, ast.Attribute] = {}
        # id(node that denotes torch.cuda) -> the attribute right above it (torch.cuda.<member>)
        self.member_of: dict[int, ast.Attribute] = {}

    def _cuda_base(self, node: ast.Attribute) -> ast.expr | None:
        cur = node.value
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
        return bool(bound and "cuda" in bound)  # an alias such as `import torch.cuda as tc`

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if self.ctx.is_claimed(node) or not self._may_be_cuda(node):
            return
        qn = self.ctx.qname(node)
        if not qn or not qn.startswith(CUDA + "."):
            return
        base = self._cuda_base(node)
        if base is not None and id(base) not in self.chain_of:
            self.chain_of[id(base)] = node
        if base is not None and node.value is base:
            self.member_of[id(base)] = node

    @staticmethod
    def renamed_member(full: str, npu_name: str) -> str | None:
        """The new member name when the counterpart is named differently (CUDAGraph ->
        NPUGraph), else None."""
        old, new = full.split("."), npu_name.split(".")
        if len(old) > 2 and len(new) > 2 and old[2] != new[2]:
            return new[2]
        return None

    def _full_name(self, original: ast.expr) -> tuple[ast.expr, str]:
        """The outermost chain above a ``torch.cuda`` node and the name it resolves to."""
        outer = self.chain_of.get(id(original))
        if outer is None:
            return original, CUDA
        return outer, self.ctx.qname(outer) or CUDA
