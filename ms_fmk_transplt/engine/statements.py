"""Walking statements of the stdlib tree without their expressions (both passes' helpers)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

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


def imports_in(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """The import statements run when a statement list runs (not inside def/class), in source
    order (every import of a module: tree_statements)."""
    found: list[ast.Import | ast.ImportFrom] = []
    _imports(body, found)
    return found


def _imports(stmts: list[ast.stmt], found: list[ast.Import | ast.ImportFrom]) -> None:
    for stmt in stmts:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            found.append(stmt)
        elif not isinstance(stmt, DEFINITIONS):
            for block in blocks(stmt):
                _imports(block, found)


@dataclass(frozen=True)
class TreeStatements:
    """What one walk of a module's statements (into every block and definition) finds: for
    engine/scopes.py, the scope nodes with a global/nonlocal statement and their enclosing
    scopes; for the module facts and the target scan, every import statement."""

    declaring: frozenset[int]  # ids of those scope nodes
    imports: tuple[ast.Import | ast.ImportFrom, ...]  # in source order


_KEY = "_msft_statements"  # kept on the tree (not a field: ast.walk and ast.dump never see it)


def tree_statements(module: ast.Module) -> TreeStatements:
    """Walked once per tree: the module facts, the span pass and the target scan each ask."""
    found: TreeStatements | None = module.__dict__.get(_KEY)
    if found is None:
        declaring: set[int] = set()
        imports: list[ast.Import | ast.ImportFrom] = []
        _walk(module.body, (), declaring, imports)
        found = module.__dict__[_KEY] = TreeStatements(frozenset(declaring), tuple(imports))
    return found


def _walk(
    body: list[ast.stmt],
    chain: tuple[int, ...],
    declaring: set[int],
    imports: list[ast.Import | ast.ImportFrom],
) -> None:
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            imports.append(stmt)
        elif isinstance(stmt, (ast.Global, ast.Nonlocal)):
            declaring.update(chain)
        elif isinstance(stmt, DEFINITIONS):
            _walk(stmt.body, (*chain, id(stmt)), declaring, imports)
        else:
            for block in blocks(stmt):
                _walk(block, chain, declaring, imports)
