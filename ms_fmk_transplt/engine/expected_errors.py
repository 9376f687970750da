"""The device word in a test's expected error text -> npu (rule expected_errors.device_name,
declared and explained in engine/spans/expected_errors_spans.py, the span pass's counterpart)."""

from __future__ import annotations

from typing import Union

import libcst as cst

from ms_fmk_transplt.engine.base import Concern, fstring_texts, replace_in_fstring
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.spans.command_overrides import shown_words
from ms_fmk_transplt.engine.spans.expected_errors_spans import (
    AROUND,
    MESSAGE,
    RULE,
    UNITTEST_CHECKS,
    hinted,
    pattern_position,
    word_offsets,
)

Literal = Union[cst.SimpleString, cst.FormattedString]


def literals(node: cst.BaseExpression) -> list[Literal]:
    """The string literals of a pattern, in order (a concatenation has several)."""
    if isinstance(node, (cst.SimpleString, cst.FormattedString)):
        return [node]
    if isinstance(node, cst.ConcatenatedString):
        return [*literals(node.left), *literals(node.right)]
    return []


def _texts(node: Literal) -> list[str]:
    """The raw text segments of a literal (an f-string's, split at its fields)."""
    if isinstance(node, cst.SimpleString):
        if "b" in node.prefix.lower():
            return []
        return [node.value[len(node.prefix) + len(node.quote) : -len(node.quote)]]
    if "b" in node.prefix.lower():
        return []
    return [text for _, text in fstring_texts(node)]


def _rewritten(node: Literal, offsets: list[tuple[int, int]]) -> Literal:
    if isinstance(node, cst.SimpleString):
        start = len(node.prefix) + len(node.quote)
        value = node.value
        for _, offset in reversed(offsets):
            at = start + offset
            value = value[:at] + "npu" + value[at + 4 :]
        return node.with_changes(value=value)
    return replace_in_fstring(node, offsets, len("cuda"), "npu")


class ExpectedErrors(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        self.active = hinted(ctx.source)

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        func = original.func
        if not self.active or not isinstance(func, (cst.Name, cst.Attribute)):
            return updated
        last = func.value if isinstance(func, cst.Name) else func.attr.value
        if last not in UNITTEST_CHECKS and last not in ("raises", "warns"):
            return updated
        where = pattern_position(last, self.ctx.qname(func))
        if where is None:
            return updated
        index = _pattern_index(original, *where)
        if index is None or self.ctx.is_claimed(original.args[index].value):
            return updated
        old, new = original.args[index].value, updated.args[index].value
        pattern, shown = self._rewrite(old, new)
        if pattern is new:
            return updated
        self.ctx.record(old, RULE, MESSAGE, *shown)
        args = list(updated.args)
        args[index] = args[index].with_changes(value=pattern)
        return updated.with_changes(args=args)

    def _rewrite(
        self, old: cst.BaseExpression, new: cst.BaseExpression
    ) -> tuple[cst.BaseExpression, tuple[str, str]]:
        before, after = literals(old), literals(new)
        if not after or len(before) != len(after):
            return new, ("", "")
        changed: dict[int, Literal] = {}
        texts: list[str] = []
        offsets: list[tuple[int, int]] = []
        for was, now in zip(before, after):
            if not was.deep_equals(now):
                continue  # already rewritten by another rule ("cuda:0" -> "npu:0")
            own = _texts(now)
            found = word_offsets(own)
            if found:
                changed[id(now)] = _rewritten(now, found)
                offsets.extend((len(texts) + index, offset) for index, offset in found)
            texts.extend(own)
        if not changed:
            return new, ("", "")
        return _swapped(new, changed), shown_words(texts, offsets, AROUND, "npu")


def _swapped(node: cst.BaseExpression, changed: dict[int, Literal]) -> cst.BaseExpression:
    """The pattern with the rewritten literals in place of the ones they replace."""
    if isinstance(node, cst.ConcatenatedString):
        left, right = _swapped(node.left, changed), _swapped(node.right, changed)
        assert isinstance(left, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString))
        assert isinstance(right, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString))
        return node.with_changes(left=left, right=right)
    return changed.get(id(node), node)


def _pattern_index(call: cst.Call, keyword: str, position: int) -> int | None:
    for i, arg in enumerate(call.args):
        if arg.keyword is not None and arg.keyword.value == keyword:
            return i
    positional = [i for i, a in enumerate(call.args) if a.keyword is None and not a.star]
    return positional[position] if 0 <= position < len(positional) else None
