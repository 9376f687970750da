"""The arguments of an ``ast.Call`` as one list in source order (positional, keyword and
starred arguments mixed as written), each with its keyword (or None) and star
(``*``/``**``/empty)."""

from __future__ import annotations

import ast
from typing import NamedTuple


class Argument(NamedTuple):
    value: ast.expr
    keyword: str | None
    star: str  # "", "*" or "**"
    node: ast.AST  # the ast node holding the argument (the value, a Starred or a keyword)


def source_args(call: ast.Call) -> list[Argument]:
    items: list[Argument] = []
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            items.append(Argument(arg.value, None, "*", arg))
        else:
            items.append(Argument(arg, None, "", arg))
    for kw in call.keywords:
        items.append(Argument(kw.value, kw.arg, "" if kw.arg else "**", kw))
    if call.keywords and call.args:
        items.sort(key=lambda a: (a.node.lineno, a.node.col_offset))  # type: ignore[attr-defined]
    return items
