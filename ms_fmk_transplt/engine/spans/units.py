"""The statements the span pass walks: those holding an anchor line (see anchors.py).

A simple statement is walked whole; a compound statement only by its header (the test of an
``if``, the items of a ``with``, a function's decorators, defaults and annotations, ...), its
body being statements of their own. Units come in source order, the order in which
the rules meet them.
"""

from __future__ import annotations

import ast
import bisect
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True)
class Unit:
    """A statement the pass walks: whole (a simple statement) or its header only (the test of an
    ``if``, a function's decorators and defaults, ...). ``ancestors`` enclose it."""

    node: ast.stmt | ast.ExceptHandler | ast.match_case
    header: bool
    ancestors: tuple[ast.AST, ...]
    lines: tuple[int, int]


DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# (match statements and except* come with Python 3.10 and 3.11)
_MATCH = getattr(ast, "Match", ())
_COMPOUND = (
    *DEFINITIONS,
    ast.If,
    ast.While,
    ast.For,
    ast.AsyncFor,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    *((_MATCH,) if _MATCH else ()),
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)

# A part of a header (ast.pattern, of a case, comes with Python 3.10: named as a string)
HeaderNode = Union[ast.expr, ast.arguments, ast.keyword, ast.withitem, "ast.pattern"]


def header_nodes(node: ast.AST) -> list[HeaderNode]:
    """The expression parts of a compound statement's header, in source order."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        out: list[HeaderNode] = [*node.decorator_list, node.args]
        if node.returns is not None:
            out.append(node.returns)
        return out
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *node.keywords]
    if isinstance(node, (ast.If, ast.While)):
        return [node.test]
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [node.target, node.iter]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return list(node.items)
    if _MATCH and isinstance(node, _MATCH):
        return [node.subject]
    if isinstance(node, ast.ExceptHandler):
        return [node.type] if node.type is not None else []
    if sys.version_info >= (3, 10) and isinstance(node, ast.match_case):
        return [node.pattern, *([node.guard] if node.guard is not None else [])]
    return []


def first_line(node: ast.stmt | ast.ExceptHandler) -> int:
    decorators: list[ast.expr] | None = getattr(node, "decorator_list", None)
    line = node.lineno
    return min([line, *(d.lineno for d in decorators)]) if decorators else line


def _header_last(node: ast.stmt | ast.ExceptHandler | ast.pattern, parts: list[HeaderNode]) -> int:
    last = node.lineno
    for part in parts:
        if isinstance(part, ast.arguments):
            args = [*part.posonlyargs, *part.args, *part.kwonlyargs, part.vararg, part.kwarg]
            for sub in [*args, *part.defaults, *part.kw_defaults]:
                if sub is not None:
                    last = max(last, sub.end_lineno or sub.lineno)
        elif isinstance(part, ast.withitem):
            for sub in (part.context_expr, part.optional_vars):
                if sub is not None:
                    last = max(last, sub.end_lineno or sub.lineno)
        else:
            last = max(last, part.end_lineno or part.lineno)
    return last


def find_units(tree: ast.Module, lines: list[int]) -> list[Unit]:
    return list(_units(tree.body, lines, ()))


def _in(lines: list[int], first: int, last: int) -> list[int]:
    return lines[bisect.bisect_left(lines, first) : bisect.bisect_right(lines, last)]


def _units(
    body: list[ast.stmt], lines: list[int], ancestors: tuple[ast.AST, ...]
) -> Iterator[Unit]:
    for stmt in body:
        first, last = first_line(stmt), stmt.end_lineno
        assert last is not None
        inside = _in(lines, first, last)
        if not inside:
            continue
        if not isinstance(stmt, _COMPOUND):
            yield Unit(stmt, False, ancestors, (first, last))
            continue
        yield from _header_unit(stmt, inside, ancestors)
        inner = (*ancestors, stmt)
        yield from _units(getattr(stmt, "body", None) or [], inside, inner)
        for handler in getattr(stmt, "handlers", None) or []:
            yield from _header_unit(handler, inside, inner)
            yield from _units(handler.body, inside, (*inner, handler))
        for case in getattr(stmt, "cases", None) or []:
            yield from _header_unit(case, inside, inner)
            yield from _units(case.body, inside, (*inner, case))
        yield from _units(getattr(stmt, "orelse", None) or [], inside, inner)
        yield from _units(getattr(stmt, "finalbody", None) or [], inside, inner)


def _header_unit(
    node: ast.stmt | ast.ExceptHandler | ast.match_case,
    lines: list[int],
    ancestors: tuple[ast.AST, ...],
) -> Iterator[Unit]:
    parts = header_nodes(node)
    if not parts:
        return
    if isinstance(node, (ast.stmt, ast.ExceptHandler)):
        first = first_line(node)
        last = _header_last(node, parts)
    else:  # a case of a match statement
        first = node.pattern.lineno
        last = _header_last(node.pattern, parts)
    if _in(lines, first, last):
        body: list[ast.stmt] | None = getattr(node, "body", None)
        if body and body[0].lineno > last:  # the lines up to the body: the header's brackets
            last = first_line(body[0]) - 1  # close there, so that they tokenize on their own
        yield Unit(node, True, ancestors, (first, last))
