"""Span pass: ``profile(use_cuda=True)`` -> ``profile(use_device="npu")`` (rule
profiler.use_cuda); see engine/profiler.py. Removing ``use_cuda=False`` moves commas and
whitespace as LibCST prints them: that case is left to the LibCST pass."""

from __future__ import annotations

import ast

from ms_fmk_transplt.engine.spans.call_args import source_args
from ms_fmk_transplt.engine.spans.decline import Decline
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.rule_catalog import declare

USE_CUDA = declare(
    "profiler.use_cuda",
    '`torch.autograd.profiler.profile(use_cuda=True)` -> `use_device="npu"`',
    "torch 2.x's autograd profiler selects the device to record with `use_device`; `use_cuda` "
    'would record nothing on the NPU. `use_cuda=True` becomes `use_device="npu"`, `use_cuda=False` '
    'is dropped, and a computed flag becomes `use_device="npu" if flag else None`. (The porting '
    "guide's `use_npu=True` predates torch 2.x, which rejects it.)",
    caveat="the autograd profiler records NPU activity through use_device='npu'; "
    "torch_npu.profiler gives more detail",
)

_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)


class ProfilerSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        table = self.tables.profiler
        self.rule, self.calls = USE_CUDA, table.calls
        self.old_kw, self.new_kw, self.value = table.old_keyword, table.new_keyword, table.value

    def leave_Call(self, node: ast.Call) -> None:
        if not any(kw.arg == self.old_kw for kw in node.keywords):
            return
        if (self.ctx.qname(node.func) or "") not in self.calls:
            return
        arg = next(a for a in source_args(node) if a.keyword == self.old_kw)
        value = arg.value
        if isinstance(value, ast.Constant) and value.value is False:
            raise Decline(f"{self.old_kw}=False is removed with its comma")
        if not isinstance(value, _ATOMS):
            raise Decline(f"{self.old_kw}= with a compound expression")
        before = self.ctx.snippet(node)
        keyword = arg.node
        kw_start = self.ctx.source.span(keyword)[0]
        self.ctx.replace(kw_start, kw_start + len(self.old_kw), self.new_kw, expect=self.old_kw)
        start, end = self.ctx.owned(value, keyword)
        device = f'"{self.value}"'
        if isinstance(value, ast.Constant) and value.value is True:
            self.ctx.replace(start, end, device)
        else:
            self.ctx.replace(start, start, f"{device} if ")
            self.ctx.replace(end, end, " else None")
        self.ctx.record(
            self.ctx.lines(keyword),
            self.rule,
            f'{self.old_kw}= -> {self.new_kw}="{self.value}"',
            before,
            self.ctx.snippet(node),
        )
