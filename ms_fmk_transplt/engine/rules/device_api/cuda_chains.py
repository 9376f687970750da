"""Which attribute chains reach ``torch.cuda`` (rules device_api.*): shared by the LibCST concern
(engine/device_api.py) and the span pass (engine/rules/device_api/device_api_spans.py).

Both trees name an attribute's object ``.value``; the class of attribute nodes is the only
difference, given by ``ATTRIBUTE``. The context (``self.ctx``) resolves names through imports.
"""

from __future__ import annotations

from typing import Any

CUDA = "torch.cuda"


class CudaChains:
    """Remembers, for each node that denotes ``torch.cuda``, the outermost attribute chain above
    it that names a ``torch.cuda.<X>`` (``torch.cuda.amp.autocast`` for ``torch.cuda``)."""

    ATTRIBUTE: type[Any] = object  # cst.Attribute or ast.Attribute: nodes of either tree
    ctx: Any

    def __init__(self, ctx: Any) -> None:
        # a mixin: the next class in the concern's MRO (Concern, SpanConcern) takes ctx
        super().__init__(ctx)  # type: ignore[call-arg]
        # id(node that denotes torch.cuda) -> outermost attribute chain above it
        self.chain_of: dict[int, Any] = {}
        # id(node that denotes torch.cuda) -> the attribute right above it (torch.cuda.<member>)
        self.member_of: dict[int, Any] = {}

    def _cuda_base(self, node: Any) -> Any:
        cur = node.value
        while True:
            if self.ctx.qname(cur) == CUDA:
                return cur
            if isinstance(cur, self.ATTRIBUTE):
                cur = cur.value
            else:
                return None

    def _may_be_cuda(self, node: Any) -> bool:
        names = self.ctx.names_in(node)
        if "cuda" in names:
            return True
        bound = self.ctx.import_bound.get(names[-1]) if names else None
        return bool(bound and "cuda" in bound)  # an alias such as `import torch.cuda as tc`

    def visit_Attribute(self, node: Any) -> None:
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

    def _full_name(self, original: Any) -> tuple[Any, str]:
        """The outermost chain above a ``torch.cuda`` node and the name it resolves to."""
        outer = self.chain_of.get(id(original))
        if outer is None:
            return original, CUDA
        return outer, self.ctx.qname(outer) or CUDA
