"""-s/--specify-device in the LibCST pass: the reference that tests/test_span_pass.py compares
engine/spans/specify_device_spans.py with (the rules are declared and described there). -s runs
take the span pass; this one runs only for a file the span pass declines.
"""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.spans.specify_device_spans import (
    DEVICE,
    HELPER,
    INDEXED,
    RANK_RISK,
    helper_code,
)
from ms_fmk_transplt.events import Notice, Severity


class SpecifyDevice(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        t = self.tables.specify_device
        self.helper = t.helper
        self.helper_code = helper_code(t)
        self.rule, self.helper_rule, self.risk_rule = DEVICE, HELPER, RANK_RISK
        self.rank_names, self.rank_env, self.env = t.rank_names, t.rank_env, t.env
        self.dict_keys: set[int] = set()
        self.concatenated: set[int] = set()
        self.indices: dict[str, int] = {}  # distinct hard-coded indices -> first line
        self.rank_line = 0
        self.changed = False

    def _claim(self, node: cst.CSTNode) -> None:
        self.ctx.claim(node)

    # -- what reads a rank (the visible risk) ------------------------------------------------
    def visit_Name(self, node: cst.Name) -> None:
        if not self.rank_line and node.value in self.rank_names:
            self.rank_line = self.ctx.lines(node)[0]

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self.dict_keys.add(id(node.key))  # map_location={'cuda:0': ...} keys name the source

    def visit_ConcatenatedString(self, node: cst.ConcatenatedString) -> None:
        # a part of "cuda:0" "" is no device selection of its own (a Name there cannot print)
        self.concatenated.update((id(node.left), id(node.right)))

    # -- literals ------------------------------------------------------------------------------
    def leave_SimpleString(
        self, original: cst.SimpleString, updated: cst.SimpleString
    ) -> cst.SimpleString | cst.Name:
        body = self.ctx.literal_body(updated)
        if body in self.rank_env and not self.rank_line:
            self.rank_line = self.ctx.lines(original)[0]
        if (
            body is None
            or not INDEXED.match(body)
            or id(original) in self.ctx.docstrings
            or id(original) in self.dict_keys
            or id(original) in self.concatenated
        ):
            return updated
        return self._helper(original, updated)

    def _note_index(self, node: cst.CSTNode, index: str) -> None:
        self.indices.setdefault(index, self.ctx.lines(node)[0])

    def _helper(self, original: cst.CSTNode, updated: cst.CSTNode) -> cst.Name:
        body = self.ctx.literal_body(original) if isinstance(original, cst.SimpleString) else None
        if body:
            self._note_index(original, body.split(":")[1])
        self._claim(original)
        self.changed = True
        new = cst.Name(self.helper)
        self.ctx.record(
            original,
            self.rule,
            f"hard-coded device -> {self.helper} ({self.env})",
            self.ctx.snippet(updated),
            self.helper,
        )
        return new

    # -- calls with an integer device index --------------------------------------------------
    def _index_args(self, node: cst.Call) -> list[int]:
        """Positions of the arguments that hard-code a device index."""
        func = node.func
        qn = self.ctx.qname(func) or ""
        method = func.attr.value if isinstance(func, cst.Attribute) else ""
        hits = []
        for i, arg in enumerate(node.args):
            if not isinstance(arg.value, cst.Integer) or arg.star:
                continue
            kw = arg.keyword.value if arg.keyword else None
            first = kw is None and i == 0
            if (
                (method in ("cuda", "npu", "to") and (first or kw == "device"))
                or (qn in ("torch.cuda.set_device", "torch.npu.set_device") and first)
                or (qn == "torch.device" and first and len(node.args) == 1)
                or kw == "device"
            ):
                hits.append(i)
        return hits

    def visit_Call(self, node: cst.Call) -> None:
        for i in self._index_args(node):
            self._claim(node.args[i].value)
        if self._device_pair(node):
            self._claim(node.args[0].value)
            self._claim(node.args[1].value)

    def _device_pair(self, node: cst.Call) -> bool:
        """torch.device("cuda", 1)"""
        if (self.ctx.qname(node.func) or "") != "torch.device" or len(node.args) != 2:
            return False
        kind, index = node.args[0].value, node.args[1].value
        return (
            isinstance(kind, cst.SimpleString)
            and self.ctx.literal_body(kind) in ("cuda", "npu")
            and isinstance(index, cst.Integer)
        )

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if self._device_pair(original):
            index = original.args[1].value
            assert isinstance(index, cst.Integer)
            self._note_index(index, index.value)
            self.changed = True
            new = updated.with_changes(args=[cst.Arg(value=cst.Name(self.helper))])
            self.ctx.record(
                original,
                self.rule,
                f"hard-coded device -> {self.helper} ({self.env})",
                self.ctx.snippet(updated),
                self.ctx.snippet(new),
            )
            return new
        hits = self._index_args(original)
        if not hits:
            return updated
        args = list(updated.args)
        for i in hits:
            value = original.args[i].value
            if isinstance(value, cst.Integer):
                self._note_index(value, value.value)
            args[i] = args[i].with_changes(value=cst.Name(self.helper))
        new = updated.with_changes(args=args)
        self.changed = True
        self.ctx.record(
            original,
            self.rule,
            f"hard-coded device index -> {self.helper} ({self.env})",
            self.ctx.snippet(updated),
            self.ctx.snippet(new),
        )
        return new

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        if not self.changed:
            return updated
        self.ctx.helper_lines.append(
            (
                self.helper_code,
                self.helper_rule,
                f"{self.helper} helper inserted (-s: the NPU comes from {self.env})",
            )
        )
        if len(self.indices) > 1:
            listed = ", ".join(sorted(self.indices))
            self.ctx.notices.append(
                Notice(
                    self.ctx.path,
                    min(self.indices.values()),
                    self.risk_rule,
                    Severity.WARNING,
                    f"this file hard-codes several devices ({listed}): -s maps them all to the "
                    f"one NPU in {self.env}",
                )
            )
        if self.rank_line:
            self.ctx.notices.append(
                Notice(
                    self.ctx.path,
                    self.rank_line,
                    self.risk_rule,
                    Severity.WARNING,
                    f"this file reads a rank: -s pins every process to the NPU in {self.env}, "
                    f"which can defeat its own multi-device logic; give each process its own "
                    f"{self.env}",
                )
            )
        return updated
