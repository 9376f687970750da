"""Collective backend: ``"nccl"`` -> ``"hccl"`` wherever the whole literal is the backend name
(backend arguments, argparse defaults, comparisons), and ``Backend.NCCL`` -> ``Backend.HCCL``
(rules distributed.nccl_backend, distributed.backend_enum)."""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.engine.base import Concern


class Distributed(Concern):
    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        section = self.tables.section("distributed")
        self.backend_rule: str = section["backend_rule"]
        self.backends: dict[str, str] = section["backend_literals"]
        self.enum_rule: str = section["enum_rule"]
        self.enums: dict[str, str] = section["enum_attributes"]
        self.enum_leaves = frozenset(e.rsplit(".", 1)[-1] for e in self.enums)

    def leave_SimpleString(
        self, original: cst.SimpleString, updated: cst.SimpleString
    ) -> cst.SimpleString:
        if id(original) in self.ctx.docstrings:
            return updated
        body = self.ctx.literal_body(updated)
        if body not in self.backends:
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

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        if original.attr.value not in self.enum_leaves:
            return updated
        qn = self.ctx.qname(original)
        if qn not in self.enums:
            return updated
        new = updated.with_changes(attr=updated.attr.with_changes(value=self.enums[qn]))
        self.ctx.record(
            original,
            self.enum_rule,
            f"{qn} -> {qn.rsplit('.', 1)[0]}.{self.enums[qn]}",
            self.ctx.snippet(updated),
            self.ctx.snippet(new),
        )
        return new
