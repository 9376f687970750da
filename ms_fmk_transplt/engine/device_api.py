"""torch.cuda.<X> -> torch.npu.<X> in expressions (rules device_api.*, amp.cuda_amp).

Names are resolved through imports: ``th.cuda.synchronize`` (``import torch as th``) is migrated,
``numba.cuda.jit`` or ``cfg.cuda`` are not. A ``torch.cuda`` reached through an import alias
(``import torch.cuda as tc``) is migrated at the import statement (engine/imports.py).
"""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.engine.base import Concern

CUDA = "torch.cuda"


class DeviceApi(Concern):
    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # id(node that denotes torch.cuda) -> outermost attribute chain above it
        self.chain_of: dict[int, cst.Attribute] = {}
        # id(outermost chain node) -> (cuda name, npu name, rule) still to be recorded
        self.pending: dict[int, tuple[str, str, str]] = {}

    def _cuda_base(self, node: cst.Attribute) -> cst.BaseExpression | None:
        cur: cst.BaseExpression = node.value
        while True:
            if self.ctx.qname(cur) == CUDA:
                return cur
            if isinstance(cur, cst.Attribute):
                cur = cur.value
            else:
                return None

    def _may_be_cuda(self, node: cst.Attribute) -> bool:
        names = self.ctx.names_in(node)
        if "cuda" in names:
            return True
        bound = self.ctx.import_bound.get(names[-1]) if names else None
        return bool(bound) and "cuda" in bound  # an alias such as `import torch.cuda as tc`

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self.ctx.is_claimed(node) or not self._may_be_cuda(node):
            return
        qn = self.ctx.qname(node)
        if not qn or not qn.startswith(CUDA + "."):
            return
        base = self._cuda_base(node)
        if base is not None and id(base) not in self.chain_of:
            self.chain_of[id(base)] = node

    def _full_name(self, original: cst.CSTNode) -> tuple[cst.CSTNode, str]:
        outer = self.chain_of.get(id(original))
        if outer is None:
            return original, CUDA
        return outer, self.ctx.qname(outer) or CUDA

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        # torch.cuda bound by an import alias: the import is migrated; warn about members the
        # NPU lacks, since the alias will then point at torch.npu.
        if self.ctx.is_claimed(original):
            return updated
        if id(original) in self.chain_of and self.ctx.qname(original) == CUDA:
            outer, full = self._full_name(original)
            if self.tables.lookup_cuda(full) is None:
                self.ctx.no_npu_counterpart(outer, full)
        return updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        pending = self.pending.pop(id(original), None)
        if pending is not None:
            cuda_name, npu_name, rule = pending
            self.ctx.record(
                original,
                rule,
                f"{cuda_name} -> {npu_name}",
                self.ctx.snippet(original),
                self.ctx.snippet(updated),
            )
        if original.attr.value != "cuda" or self.ctx.qname(original) != CUDA:
            return updated
        if self.ctx.is_claimed(original):
            return updated
        outer, full = self._full_name(original)
        mapped = self.tables.lookup_cuda(full)
        if mapped is None:
            self.ctx.no_npu_counterpart(outer, full)
            return updated
        npu_name, rule = mapped
        new = updated.with_changes(attr=updated.attr.with_changes(value="npu"))
        if outer is original:
            self.ctx.record(
                original,
                rule,
                f"{full} -> {npu_name}",
                self.ctx.snippet(original),
                self.ctx.snippet(new),
            )
        else:
            self.pending[id(outer)] = (full, npu_name, rule)
        return new
