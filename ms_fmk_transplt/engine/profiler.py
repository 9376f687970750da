"""Autograd profiler: ``use_cuda=True`` -> ``use_device="npu"`` (rule profiler.use_cuda).

The porting guide's ``use_npu=True`` predates torch 2.x, whose profiler rejects unknown keywords;
torch 2.x takes ``use_device=<privateuse1 backend name>``, which is what torch_npu registers.
``use_cuda=False`` is dropped (the default); a computed flag becomes ``use_device="npu" if flag else
None``.
"""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.spans.profiler_spans import USE_CUDA


class Profiler(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        table = self.tables.profiler
        self.rule, self.calls = USE_CUDA, table.calls
        self.old_kw, self.new_kw, self.value = table.old_keyword, table.new_keyword, table.value

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if not any(a.keyword and a.keyword.value == self.old_kw for a in original.args):
            return updated
        if (self.ctx.qname(original.func) or "") not in self.calls:
            return updated
        index = next(
            (
                i
                for i, a in enumerate(original.args)
                if a.keyword and a.keyword.value == self.old_kw
            ),
            None,
        )
        if index is None:
            return updated
        args = list(updated.args)
        arg = args[index]
        device = cst.SimpleString(f'"{self.value}"')
        if isinstance(arg.value, cst.Name) and arg.value.value == "False":
            del args[index]
            if index == len(args) and args:  # removed the last argument: drop the dangling comma
                args[-1] = args[-1].with_changes(comma=arg.comma)
            message = f"{self.old_kw}=False removed (the default)"
        else:
            if isinstance(arg.value, cst.Name) and arg.value.value == "True":
                value: cst.BaseExpression = device
            else:
                value = cst.IfExp(
                    test=arg.value,
                    body=device,
                    orelse=cst.Name("None"),
                )
            args[index] = arg.with_changes(keyword=cst.Name(self.new_kw), value=value)
            message = f'{self.old_kw}= -> {self.new_kw}="{self.value}"'
        new = updated.with_changes(args=args)
        self.ctx.record(
            original.args[index],
            self.rule,
            message,
            self.ctx.snippet(updated),
            self.ctx.snippet(new),
        )
        return new
