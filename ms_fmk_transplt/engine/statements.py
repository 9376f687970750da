"""Walking statements of the stdlib tree without their expressions (both passes' helpers)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists inside a compound statement, in source order."""
    yield getattr(stmt, "body", None) or []
    for handler in getattr(stmt, "handlers", None) or []:
        yield handler.body
    for case in getattr(stmt, "cases", None) or []:
        yield case.body
    yield getattr(stmt, "orelse", None) or []
    yield getattr(stmt, "finalbody", None) or []


def imports_in(body: list[ast.stmt], into_definitions: bool) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of a statement list, in source order: all of them, or only those
    run when the list runs (not inside def/class)."""
    found: list[ast.Import | ast.ImportFrom] = []
    _imports(body, into_definitions, found)
    return found


def _imports(
    stmts: list[ast.stmt], into_definitions: bool, found: list[ast.Import | ast.ImportFrom]
) -> None:
    for stmt in stmts:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            found.append(stmt)
        elif into_definitions or not isinstance(stmt, DEFINITIONS):
            for block in blocks(stmt):
                _imports(block, into_definitions, found)
