"""torch.cuda.<X> -> torch.npu.<X> in expressions (rules device_api.*, amp.cuda_amp).

Names are resolved through imports: ``th.cuda.synchronize`` (``import torch as th``) is migrated,
``numba.cuda.jit`` or ``cfg.cuda`` are not. A ``torch.cuda`` reached through an import alias
(``import torch.cuda as tc``) is migrated at the import statement (engine/imports.py).
"""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.cuda_chains import CUDA, CudaChains


class DeviceApi(CudaChains, Concern):
    ATTRIBUTE = cst.Attribute

    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        # id(outermost chain node) -> (cuda name, npu name, rule) still to be recorded
        self.pending: dict[int, tuple[str, str, str]] = {}
        self.member_renames: dict[int, str] = {}  # id(torch.cuda.<member> node) -> new member

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        # torch.cuda bound by an import alias: the import is migrated; warn about members the
        # NPU lacks, since the alias will then point at torch.npu.
        if self.ctx.is_claimed(original):
            return updated
        if id(original) in self.chain_of and self.ctx.qname(original) == CUDA:
            outer, full = self._full_name(original)
            if self.tables.lookup_cuda_import(full) is None:  # an alias keeps member names
                self.ctx.no_npu_counterpart(outer, full)
        return updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        member = self.member_renames.pop(id(original), None)
        if member is not None:
            updated = updated.with_changes(attr=updated.attr.with_changes(value=member))
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
        member = self.renamed_member(full, npu_name)
        if member is not None and id(original) in self.member_of:
            self.member_renames[id(self.member_of[id(original)])] = member
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
