"""Tensor/Module methods: ``x.cuda(...)`` -> ``x.npu(...)``, ``x.is_cuda`` -> ``x.is_npu``
(rules tensor_methods.cuda_call, tensor_methods.is_cuda)."""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.spans.tensor_methods_spans import CUDA_CALL, IS_CUDA, RECEIVER_MAX


def receiver_text(ctx: MigrationContext, node: cst.BaseExpression) -> str:
    text = ctx.snippet(node)
    return text if len(text) <= RECEIVER_MAX else "…" + text[1 - RECEIVER_MAX :]


class TensorMethods(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        table = self.tables.tensor_methods
        self.call_rule, self.call_map = CUDA_CALL, table.calls
        self.attr_rule, self.attr_map = IS_CUDA, table.attributes

    def _is_method_on_value(self, func: cst.Attribute) -> bool:
        """A method call on some value, not a module function (torch.cuda(), numba.cuda...)."""
        if self.ctx.is_foreign(func.value):
            return False
        qn = self.ctx.qname(func)
        return not (qn and qn.startswith("torch.") and qn.count(".") == 1)

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = original.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in self.call_map:
            return updated
        if not self._is_method_on_value(func):
            return updated
        new_name = self.call_map[func.attr.value]
        assert isinstance(updated.func, cst.Attribute)
        new = updated.with_changes(
            func=updated.func.with_changes(attr=updated.func.attr.with_changes(value=new_name))
        )
        recv = receiver_text(self.ctx, updated.func.value)
        # "(args)": the call printed with `_` as its function, without the parentheses that
        # wrap the whole call and the space before "(", minus that first character
        bare = new.with_changes(
            func=cst.Name("_"), lpar=[], rpar=[], whitespace_after_func=cst.SimpleWhitespace("")
        )
        args = self.ctx.snippet(bare)[1:]
        self.ctx.record(
            func.attr,
            self.call_rule,
            f".{func.attr.value}() -> .{new_name}()",
            f"{recv}.{func.attr.value}{args}",
            f"{recv}.{new_name}{args}",
        )
        return new

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        name = original.attr.value
        if name not in self.attr_map or self.ctx.is_claimed(original):
            return updated
        if not self._is_method_on_value(original):
            return updated
        new_name = self.attr_map[name]
        recv = receiver_text(self.ctx, updated.value)
        self.ctx.record(
            original.attr,
            self.attr_rule,
            f".{name} -> .{new_name}",
            f"{recv}.{name}",
            f"{recv}.{new_name}",
        )
        return updated.with_changes(attr=updated.attr.with_changes(value=new_name))
