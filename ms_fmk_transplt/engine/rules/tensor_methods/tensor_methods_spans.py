"""Span pass: ``x.cuda(...)`` -> ``x.npu(...)``, ``x.is_cuda`` -> ``x.is_npu`` (rules
tensor_methods.*, declared here)."""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import declare
from ms_fmk_transplt.engine.recorder import snippet_of
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext

CUDA_CALL = declare(
    "tensor_methods.cuda_call",
    "`x.cuda(...)` / `model.cuda(args.gpu)` -> `.npu(...)`",
    "Moves tensors and modules to the NPU: the method `.cuda()` of any value (a tensor, a module, "
    "a `.half().cuda()` chain) becomes `.npu()` with the same arguments (a device index stays an "
    "index). Module functions that happen to be called `cuda` (`torch.cuda()`, `numba.cuda`, "
    "`cfg.cuda`) are not methods of a value and are left alone.",
)
IS_CUDA = declare(
    "tensor_methods.is_cuda",
    "`x.is_cuda` -> `x.is_npu`",
    "A tensor on the NPU answers `is_cuda` with False, so code that branches on it would take "
    "its CPU path; torch_npu adds `is_npu`, which is True for NPU tensors.",
)


RECEIVER_MAX = 80  # a longer receiver is shown by its end, the part next to .cuda()


class TensorMethodsSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        table = self.tables.tensor_methods
        self.call_rule, self.call_map = CUDA_CALL, table.calls
        self.attr_rule, self.attr_map = IS_CUDA, table.attributes

    def _is_method_on_value(self, func: ast.Attribute) -> bool:
        """A method call on some value, not a module function (torch.cuda(), numba.cuda...)."""
        if self.ctx.is_foreign(func.value):
            return False
        inner = func.value
        while isinstance(inner, (ast.Call, ast.Subscript)):
            inner = inner.func if isinstance(inner, ast.Call) else inner.value
        if not isinstance(inner, ast.Name):
            return True  # only a name (called or subscripted) before the dot can be `torch`
        qn = self.ctx.qname(func)
        return not (qn and qn.startswith("torch.") and qn.count(".") == 1)

    def _receiver(self, func: ast.Attribute) -> str:
        text = self.ctx.snippet(func.value, func)
        return text if len(text) <= RECEIVER_MAX else "…" + text[1 - RECEIVER_MAX :]

    def leave_Call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr not in self.call_map:
            return
        if not self._is_method_on_value(func):
            return
        new_name = self.call_map[func.attr]
        self.ctx.rename_attr(func, new_name)
        recv = self._receiver(func)
        # the call with its receiver and method name cut off: "(args)", without the
        # parentheses that wrap the whole call
        end = self.ctx.source.span(node)[1]
        func_end = self.ctx.source.span(func)[1]
        args = snippet_of(self.ctx.edits.text(func_end, end).lstrip())
        last = func.end_lineno or func.lineno
        self.ctx.record(
            (last, last),
            self.call_rule,
            f".{func.attr}() -> .{new_name}()",
            f"{recv}.{func.attr}{args}",
            f"{recv}.{new_name}{args}",
        )

    def leave_Attribute(self, node: ast.Attribute) -> None:
        name = node.attr
        if name not in self.attr_map or self.ctx.is_claimed(node):
            return
        if not self._is_method_on_value(node):
            return
        new_name = self.attr_map[name]
        recv = self._receiver(node)
        self.ctx.rename_attr(node, new_name)
        last = node.end_lineno or node.lineno
        self.ctx.record(
            (last, last),
            self.attr_rule,
            f".{name} -> .{new_name}",
            f"{recv}.{name}",
            f"{recv}.{new_name}",
        )
