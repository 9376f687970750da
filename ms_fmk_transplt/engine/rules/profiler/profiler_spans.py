"""Span pass: ``profile(use_cuda=True)`` -> ``profile(use_device="npu")`` (rule
profiler.use_cuda, declared here). ``use_cuda=False`` is removed with its comma and whitespace:
the ones after it, or, for the last argument, the comma before it (a trailing comma stays), as
the earlier LibCST implementation removed it."""

from __future__ import annotations

import ast
import re

from ms_fmk_transplt.catalogue.rule_catalog import declare
from ms_fmk_transplt.engine.spans.call_args import Argument, source_args
from ms_fmk_transplt.engine.spans.decline import Decline
from ms_fmk_transplt.engine.spans.source_text import SourceText, Token
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext

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

# values that `"npu" if <value> else None` needs in parentheses to stay valid code
_NEEDS_PARENS = (ast.IfExp, ast.Lambda, ast.NamedExpr)


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
        args = source_args(node)
        index = next(i for i, a in enumerate(args) if a.keyword == self.old_kw)
        arg = args[index]
        value = arg.value
        if isinstance(value, ast.Constant) and value.value is False:
            self._remove(node, args, index)
            return
        keyword = arg.node
        if isinstance(value, _NEEDS_PARENS) and self.ctx.owned(value, keyword) == (
            self.ctx.source.span(value)
        ):
            raise Decline(f"{self.old_kw}= with a conditional or lambda expression")
        before = self.ctx.snippet(node)
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

    def _remove(self, node: ast.Call, args: list[Argument], index: int) -> None:
        """Drops ``use_cuda=False`` (the default) with its comma and what follows up to the
        next argument. The last one goes with the comma before it (and the whitespace before
        that comma); its own trailing comma, if any, stays."""
        before = self.ctx.snippet(node)
        keyword = args[index].node
        source = self.ctx.source
        start, own_end = source.span(keyword)
        rparen = source.span(node)[1] - 1
        own_line = _own_line(source, keyword)
        if own_line is not None:  # on a line of its own: emptied (its comment stays)
            self.ctx.replace(*own_line, "")
        elif index + 1 < len(args):
            end = source.span(args[index + 1].node)[0]
        else:
            tokens = source.tokens(node.lineno, node.end_lineno or node.lineno)
            trailing = _comma_after(tokens, own_end, rparen)
            end = rparen if trailing is None or not index else _end_before(tokens, trailing)
            if index:  # from the end of the argument before it
                comma = _comma_after(tokens, source.span(args[index - 1].node)[1], rparen)
                assert comma is not None  # an argument follows
                start = _end_before(tokens, comma)
        if own_line is None:
            self.ctx.replace(start, end, "")
        self.ctx.record(
            self.ctx.lines(keyword),
            self.rule,
            f"{self.old_kw}=False removed (the default)",
            before,
            self.ctx.snippet(node),
        )


def _own_line(source: SourceText, keyword: ast.AST) -> tuple[int, int] | None:
    """The bytes to remove for an argument alone on its line (``    use_cuda=False,  # c``):
    what is on the line, or, when a comment ends it, what is before the comment (the line
    stays, so no line moves)."""
    if not isinstance(keyword, ast.keyword):
        return None
    line = keyword.lineno
    if keyword.end_lineno != line:
        return None
    data = source.data
    first, end = source.starts[line - 1], source.line_end(line)
    start, own_end = source.span(keyword)
    rest = data[own_end:end]
    after = re.fullmatch(rb"[ \t]*,?[ \t]*(#[^\r\n]*)?\r?\n?", rest)
    if data[first:start].strip() or after is None:
        return None
    if after.group(1):  # keep the indentation and the comment
        return start, end - len(rest) + after.start(1)
    return first, end - len(rest) + len(rest.rstrip(b"\r\n"))  # an empty line stays


def _comma_after(tokens: list[Token], at: int, limit: int) -> int | None:
    """The offset of the first comma token in [at, limit), if any."""
    return next((t[1] for t in tokens if t[0] == "," and at <= t[1] < limit), None)


def _end_before(tokens: list[Token], at: int) -> int:
    """The end of the last token before offset ``at`` (a comma's whitespace goes with it)."""
    return max(t[2] for t in tokens if t[2] <= at)
