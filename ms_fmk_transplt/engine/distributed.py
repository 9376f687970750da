"""Collective backend: ``"nccl"`` -> ``"hccl"`` wherever the whole literal is the backend name
(backend arguments, argparse defaults, comparisons), per-device backend strings
``"cpu:gloo,cuda:nccl"`` -> ``"cpu:gloo,npu:hccl"``, and ``Backend.NCCL`` -> ``Backend.HCCL``
(rules distributed.nccl_backend, distributed.compound_backend, distributed.backend_enum)."""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.engine.backends import compound
from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.spans.distributed_spans import (
    BACKEND_ENUM,
    COMPOUND_BACKEND,
    NCCL_AVAILABLE,
    NCCL_BACKEND,
)


class Distributed(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        table = self.tables.distributed
        self.backend_rule, self.backends = NCCL_BACKEND, table.backends
        self.enum_rule, self.enums, self.enum_leaves = (
            BACKEND_ENUM,
            table.enums,
            table.enum_leaves,
        )
        self.renames = table.renames
        self.compound_rule, self.pairs = COMPOUND_BACKEND, table.pairs

    def leave_SimpleString(
        self, original: cst.SimpleString, updated: cst.SimpleString
    ) -> cst.SimpleString:
        if id(original) in self.ctx.docstrings or self.ctx.is_claimed(original):
            return updated
        body = self.ctx.literal_body(updated)
        if body is not None and body not in self.backends and ":" in body:
            return self._leave_compound(original, updated, body)
        if body is None or body not in self.backends:
            return updated
        new = self.ctx.with_literal_body(updated, self.backends[body])
        self.ctx.record(
            original,
            self.backend_rule,
            f"backend '{body}' -> '{self.backends[body]}'",
            updated.value,
            new.value,
        )
        return new

    def _leave_compound(
        self, original: cst.SimpleString, updated: cst.SimpleString, body: str
    ) -> cst.SimpleString:
        value = compound(body, self.pairs)
        if value is None:
            return updated
        new = self.ctx.with_literal_body(updated, value)
        self.ctx.record(
            original, self.compound_rule, f"backend '{body}' -> '{value}'", updated.value, new.value
        )
        return new

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        if original.attr.value not in self.enum_leaves or self.ctx.is_claimed(original):
            return updated
        qn = self.ctx.qname(original)
        if qn is None:  # (neither table has a None key)
            return updated
        new_leaf = self.enums.get(qn) or self.renames.get(qn)
        if new_leaf is None:
            return updated
        new = updated.with_changes(attr=updated.attr.with_changes(value=new_leaf))
        self.ctx.record(
            original,
            NCCL_AVAILABLE if qn in self.renames else self.enum_rule,
            f"{qn} -> {qn.rsplit('.', 1)[0]}.{new_leaf}",
            self.ctx.snippet(updated),
            self.ctx.snippet(new),
        )
        return new
