"""-s/--specify-device: hard-coded device selections use the NPU chosen by the DEVICE_ID
environment variable (rules specify_device.*).

``"cuda:1"``, ``.cuda(1)``, ``set_device(1)``, ``torch.device("cuda", 1)``, ``torch.device(1)``,
``x.to(1)``, ``device=1`` and ``map_location="cuda:0"`` become ``MSFT_NPU_DEVICE``, defined once
per file right after ``import torch_npu`` (TorchNpuInsert puts it there):

    MSFT_NPU_DEVICE = "npu:" + os.environ.get("DEVICE_ID", "0")

Computed selections (``f"cuda:{rank}"``, ``.cuda(args.gpu)``) are the script's own multi-device
logic and are left to the normal rules. The literals and integers rewritten here are claimed, so
device_strings leaves them alone; the concern runs before tensor_methods, whose Before text then
shows ``x.cuda(MSFT_NPU_DEVICE)``. Caveat (as in the original tool): pinning every process to
DEVICE_ID can defeat a script's multi-device logic, so a file that reads a rank gets a warning.
"""

from __future__ import annotations

import ast
import re

from ms_fmk_transplt.catalogue.rule_catalog import INSERTED_LINES, NOTICE, declare
from ms_fmk_transplt.engine.rules.device_strings.device_names import is_integer
from ms_fmk_transplt.engine.rules.family_spec import Finishing
from ms_fmk_transplt.engine.rules.specify_device.rank_reads import first_rank_line
from ms_fmk_transplt.engine.spans.call_args import Argument, source_args
from ms_fmk_transplt.engine.spans.module_facts import ModuleFacts
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext, StringPart
from ms_fmk_transplt.tables.table_sections import SpecifyDeviceTable

DEVICE = declare(
    "specify_device.device",
    '-s: hard-coded device selections (`"cuda:1"`, `.cuda(1)`, `set_device(1)`) -> '
    "`MSFT_NPU_DEVICE`",
    "With `-s/--specify-device` (as in the original tool), every hard-coded device selection uses "
    'the NPU named by the `DEVICE_ID` environment variable (default 0): `"cuda:1"`, `.cuda(1)`, '
    '`set_device(1)`, `torch.device("cuda", 1)`, `torch.device(1)`, `x.to(1)`, `device=1`, '
    "FSDP's `device_id=1` and "
    '`map_location="cuda:0"` become `MSFT_NPU_DEVICE`. Computed selections (`f"cuda:{rank}"`, '
    "`.cuda(args.gpu)`) are the script's own multi-device logic and keep the normal rules.",
    option="-s",
)
HELPER = declare(
    "specify_device.helper",
    '-s: `MSFT_NPU_DEVICE = "npu:" + os.environ.get("DEVICE_ID", "0")` inserted once per file',
    "The helper that `specify_device.device` rewrites refer to, defined once per changed file "
    "right after `import torch_npu` (with `import os` when the file lacks it).",
    option="-s",
    fixed=INSERTED_LINES,
)
RANK_RISK = declare(
    "specify_device.rank_risk",
    "-s on a file that reads a rank or hard-codes several devices: a warning",
    "Pinning every process to the NPU in `DEVICE_ID` can defeat a script's own multi-device "
    "logic: a file that reads `LOCAL_RANK`/`RANK` or hard-codes more than one device index gets a "
    "WARNING in the log. Give each process its own `DEVICE_ID`, or run without `-s`.",
    kind=NOTICE,
    option="-s",
)

INDEXED = re.compile(r"^(cuda|npu):[0-9]+$")
# words -s acts on that are no anchor of the built-in rules ("npu:1", .npu(1)); see anchors.py
ANCHOR_WORDS = ("npu",)
SET_DEVICE = ("torch.cuda.set_device", "torch.npu.set_device")


def helper_code(t: SpecifyDeviceTable) -> str:
    """The helper line inserted once per changed file."""
    return (
        f'{t.helper} = "npu:" + os.environ.get("{t.env}", "{t.default}")'
        f"  # ms_fmk_transplt -s: the NPU is chosen by {t.env}"
    )


class SpecifyDeviceSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        t = self.tables.specify_device
        self.helper, self.env = t.helper, t.env
        self.dict_keys: set[int] = set()  # map_location={'cuda:0': ...} keys name the source

    def visit_Dict(self, node: ast.Dict) -> None:
        self.dict_keys.update(id(key) for key in node.keys if key is not None)

    # -- literals ------------------------------------------------------------------------------
    def leave_SimpleString(self, part: StringPart) -> None:
        # A part of an implicit concatenation ("cuda:0" "") is no device selection of its own:
        # the normal rules take it.
        if not part.whole or part.docstring or id(part.node) in self.dict_keys:
            return
        body = self.ctx.body(part)
        if body is None or not INDEXED.match(body):
            return
        ctx = self.ctx
        token = part.token
        self._note_index(part.lines[0], token.body.split(":")[1])
        ctx.claim(part.key)
        before = ctx.snippet(part.node)  # with the parentheses that wrap it alone
        owned = ctx.owned(part.node)
        self._replace(owned[0], (token.start, token.end), owned[1])
        message = f"hard-coded device -> {self.helper} ({self.env})"
        ctx.record(part.lines, DEVICE, message, before, self.helper)

    def _note_index(self, line: int, index: str) -> None:
        self.ctx.device_indices.setdefault(index, line)

    # -- calls with an integer device index --------------------------------------------------
    def _index_args(self, node: ast.Call, args: list[Argument]) -> list[int]:
        """Positions of the arguments that hard-code a device index."""
        if not any(is_integer(arg.value) for arg in args):
            return []
        func = node.func
        qn = self.ctx.qname(func) or ""
        method = func.attr if isinstance(func, ast.Attribute) else ""
        hits = []
        for i, arg in enumerate(args):
            if not is_integer(arg.value) or arg.star:
                continue
            kw = arg.keyword
            first = kw is None and i == 0
            if (
                (method in ("cuda", "npu", "to") and (first or kw == "device"))
                or (qn in SET_DEVICE and first)
                or (qn == "torch.device" and first and len(args) == 1)
                or kw == "device"
                or kw in self.tables.int_device.call_device_keywords.get(qn, ())  # FSDP device_id
            ):
                hits.append(i)
        return hits

    def _device_pair(self, node: ast.Call, args: list[Argument]) -> bool:
        """torch.device("cuda", 1)"""
        if len(args) != 2 or not is_integer(args[1].value):
            return False
        kind = args[0].value
        if not (isinstance(kind, ast.Constant) and isinstance(kind.value, str)):
            return False
        token = self.ctx.string_token(kind)
        if token is None or token.is_bytes or "f" in token.prefix.lower():
            return False
        return token.body in ("cuda", "npu") and self.ctx.qname(node.func) == "torch.device"

    def visit_Call(self, node: ast.Call) -> None:
        args = source_args(node)
        for i in self._index_args(node, args):
            self.ctx.claim(args[i].value)
        if self._device_pair(node, args):
            self.ctx.claim(args[0].value)
            self.ctx.claim(args[1].value)

    def leave_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        args = source_args(node)
        if self._device_pair(node, args):
            index = args[1].value
            self._note_index(index.lineno, self._text(index))
            before = ctx.snippet(node)
            first = args[0]
            if first.keyword is None:
                start = ctx.owned(first.value, node)[0]
            else:
                start = ctx.source.span(first.node)[0]
            # the argument list becomes the helper alone (up to the call's ")")
            close = ctx.source.span(node)[1] - 1
            self._replace(start, ctx.source.span(first.value), close)
            message = f"hard-coded device -> {self.helper} ({self.env})"
            ctx.record(ctx.lines(node), DEVICE, message, before, ctx.snippet(node))
            return
        hits = self._index_args(node, args)
        if not hits:
            return
        before = ctx.snippet(node)
        for i in hits:
            arg = args[i]
            self._note_index(arg.value.lineno, self._text(arg.value))
            owned = ctx.owned(arg.value, arg.node if arg.keyword is not None else node)
            self._replace(owned[0], ctx.source.span(arg.value), owned[1])
        message = f"hard-coded device index -> {self.helper} ({self.env})"
        ctx.record(ctx.lines(node), DEVICE, message, before, ctx.snippet(node))

    def _replace(self, start: int, value: tuple[int, int], end: int) -> None:
        """Bytes [start, end) become the helper: [value) is replaced by it and the rest removed
        (parentheses, a keyword, later arguments), so that the value itself reads as the helper
        to the concerns after this one."""
        ctx = self.ctx
        if start < value[0]:
            ctx.replace(start, value[0], "", checked=True)
        ctx.replace(value[0], value[1], self.helper, checked=True)
        if value[1] < end:
            ctx.replace(value[1], end, "", checked=True)

    def _text(self, node: ast.AST) -> str:
        start, end = self.ctx.source.span(node)
        return self.ctx.source.text(start, end)


def finish_file(ctx: SpanContext, facts: ModuleFacts) -> None:
    """Once every statement is walked: the helper line for TorchNpuInsert, and the warnings
    (several hard-coded devices; a file that reads a rank)."""
    indices = ctx.device_indices
    if not indices:
        return  # (every rewrite notes its index: nothing was rewritten)
    t = ctx.tables.specify_device
    message = f"{t.helper} helper inserted (-s: the NPU comes from {t.env})"
    ctx.helper_lines.append((helper_code(t), HELPER, message))
    if len(indices) > 1:
        listed = ", ".join(sorted(indices))
        first = min(indices.values())
        ctx.warn(
            (first, first),
            RANK_RISK,
            f"this file hard-codes several devices ({listed}): -s maps them all to the "
            f"one NPU in {t.env}",
        )
    rank_line = first_rank_line(ctx.source, facts.lines, t.rank_names, t.rank_env)
    if rank_line:
        ctx.warn(
            (rank_line, rank_line),
            RANK_RISK,
            f"this file reads a rank: -s pins every process to the NPU in {t.env}, "
            f"which can defeat its own multi-device logic; give each process its own {t.env}",
        )


def anchor_words(ctx: SpanContext) -> tuple[str, ...]:
    """With -s, ``npu`` anchors a statement too (Family.anchor_words)."""
    return ANCHOR_WORDS if ctx.options.specify_device else ()


def finish(ctx: SpanContext, facts: ModuleFacts, done: Finishing) -> None:
    """The family's finishing step (Family.finish): with -s, finish_file."""
    if ctx.options.specify_device:
        finish_file(ctx, facts)
