"""Span pass: the device-type literals of AMP entry points (rule amp.device_type). The
literal is claimed here and rewritten by device_strings."""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import declare
from ms_fmk_transplt.engine.spans.call_args import source_args
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext

DEVICE_TYPE = declare(
    "amp.device_type",
    '`torch.autocast("cuda")`, `torch.amp.GradScaler("cuda")` -> `"npu"`',
    "The device-type argument of the AMP entry points (`torch.autocast`, "
    "`torch.amp.autocast`, `torch.amp.GradScaler`, `custom_fwd/custom_bwd`) selects the autocast "
    'backend; with `"cuda"` nothing is autocast on the NPU. The literal (positional or '
    '`device_type=`) becomes `"npu"`.',
)
CUDA_AMP = declare(
    "amp.cuda_amp",
    "`torch.cuda.amp.autocast/GradScaler/custom_fwd/custom_bwd` -> `torch.npu.amp.*`",
    "torch_npu provides the CUDA AMP namespace as `torch.npu.amp` with the same classes and "
    "arguments; uses and imports of `torch.cuda.amp` are moved there (rows of the namespace table "
    "in rules/interface_table.json name this rule).",
)


class AmpSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        table = self.tables.amp
        self.rule, self.calls, self.keywords, self.leaves = (
            DEVICE_TYPE,
            table.calls,
            table.keywords,
            table.leaves,
        )

    def visit_Call(self, node: ast.Call) -> None:
        if self.ctx.last_name(node.func) not in self.leaves:
            return
        if (self.ctx.qname(node.func) or "") not in self.calls:
            return
        for i, arg in enumerate(source_args(node)):
            is_device = (arg.keyword is None and i == 0 and not arg.star) or (
                arg.keyword is not None and arg.keyword in self.keywords
            )
            if is_device and self.ctx.is_single_string(arg.value):
                self.ctx.claim(arg.value, rule=self.rule)
