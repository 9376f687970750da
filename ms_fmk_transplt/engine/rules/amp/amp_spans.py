"""Span pass: the device-type literals of AMP entry points (rule amp.device_type; the literal is
claimed here and rewritten by device_strings) and the device of a GradScaler that names none
(amp.scaler_device)."""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import declare
from ms_fmk_transplt.engine.rules.advice.advice_rows import FP16_LOSS_SCALING
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
    answers=FP16_LOSS_SCALING,  # a GradScaler on the NPU: the advice's change is done
)
CUDA_AMP = declare(
    "amp.cuda_amp",
    "`torch.cuda.amp.autocast/GradScaler/custom_fwd/custom_bwd` -> `torch.npu.amp.*`",
    "torch_npu provides the CUDA AMP namespace as `torch.npu.amp` with the same classes and "
    "arguments; uses and imports of `torch.cuda.amp` are moved there (rows of the namespace table "
    "in rules/interface_table.json name this rule).",
)
SCALER_DEVICE = declare(
    "amp.scaler_device",
    '`torch.amp.GradScaler()` -> `torch.amp.GradScaler("npu")`',
    '`torch.amp.GradScaler`\'s device defaults to `"cuda"`, and where CUDA is absent it warns and '
    "disables itself (torch/amp/grad_scaler.py): on the NPU float16 loss scaling would be "
    "silently off. A call naming no device (no positional argument, no `device=`, no `*args` / "
    '`**kwargs`) gets `"npu"` as its first argument; its other arguments are kept. '
    "`torch.cuda.amp.GradScaler()` becomes `torch.npu.amp.GradScaler()` (amp.cuda_amp), whose "
    'device is the NPU; `GradScaler("cuda")` / `device="cuda"` is amp.device_type\'s.',
    caveat="torch's generic scaler: on the Atlas training series (no inf/nan mode) torch_npu's "
    "torch.npu.amp.GradScaler also shares a rank's overflow with the other ranks "
    "(torch_npu/npu/amp/grad_scaler.py); use it there for distributed float16 training",
    answers=FP16_LOSS_SCALING,
)
SCALER = "GradScaler"  # the AMP entry points whose device defaults to "cuda"


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
        qualified = self.ctx.qname(node.func) or ""
        if qualified not in self.calls:
            return
        args = source_args(node)
        if qualified.rsplit(".", 1)[-1] == SCALER and not any(
            a.keyword is None or a.keyword in self.keywords for a in args
        ):
            self._name_device(node, qualified, bool(args))
        for i, arg in enumerate(args):
            is_device = (arg.keyword is None and i == 0 and not arg.star) or (
                arg.keyword is not None and arg.keyword in self.keywords
            )
            if is_device and self.ctx.is_single_string(arg.value):
                self.ctx.claim(arg.value, rule=self.rule)

    def _name_device(self, node: ast.Call, qualified: str, more: bool) -> None:
        """``GradScaler(enabled=True)`` -> ``GradScaler("npu", enabled=True)``: no positional
        argument, no device keyword and no ``*``/``**`` (source_args gives those keyword None)."""
        data = self.ctx.source.data
        at = self.ctx.source.span(node.func)[1]
        while at < len(data) and data[at : at + 1] in (b" ", b"\t"):
            at += 1
        if data[at : at + 1] != b"(":
            return  # a comment or a line break before the parenthesis: left as written
        before = self.ctx.snippet(node, updated=False)
        after = ("," if data[at + 1 : at + 2] in (b"\n", b"\r") else ", ") if more else ""
        self.ctx.replace(at, at + 1, f'("npu"{after}', expect="(")
        self.ctx.record(
            self.ctx.lines(node), SCALER_DEVICE, f'{qualified}(): device "npu" named', before,
            self.ctx.snippet(node),
        )  # fmt: skip
