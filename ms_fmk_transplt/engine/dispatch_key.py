"""Kernels registered for a CUDA dispatch key are reported (rule cuda_only.dispatch_key, declared
and explained in engine/spans/dispatch_key_spans.py, the span pass's counterpart)."""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.engine.base import Concern, literal_value
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.spans.dispatch_key_spans import (
    ENTRY,
    REGISTRARS,
    RULE,
    hinted,
    message,
    registered_key,
    registrar,
)


class DispatchKeys(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        self.active = hinted(ctx.source)

    def visit_Call(self, node: cst.Call) -> None:
        if not self.active:
            return
        func = node.func
        last = func.attr.value if isinstance(func, cst.Attribute) else None
        if isinstance(func, cst.Name):
            last = func.value
        if last not in REGISTRARS:
            return
        key = registered_key([literal_value(a.value) for a in node.args])
        if key is not None:
            api = registrar(self.ctx.qname(func))
            self.ctx.unsupported(node, api, ENTRY, message(key), RULE)
