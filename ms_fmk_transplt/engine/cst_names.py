"""Qualified names for the LibCST stages, from engine/scopes.py instead of LibCST's providers.

The LibCST stages of the structural options (engine/stages.py) ask what their CST nodes refer
to. The answer comes from the stdlib tree of the same code: each Name, Attribute and Call of
the tree is indexed by its place (line and character column, as LibCST's PositionProvider gives
them), with the scope it is read in, and resolved by engine/scopes.py when asked. A node without a
counterpart at its place (a name inside an import, an attribute's name, a keyword) has no
qualified names, as with LibCST.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Any

from ms_fmk_transplt.engine.scope_model import COMPREHENSIONS, FUNCTIONS, Scope
from ms_fmk_transplt.engine.scopes import Scopes

Place = tuple[str, int, int, int, int]  # kind, start line, start column, end line, end column
_INDEXED = (ast.Name, ast.Attribute, ast.Call)


class CstNames:
    """The qualified names of the expressions of one module, by place."""

    def __init__(self, code: bytes) -> None:
        self.tree = ast.parse(code)
        self.scopes = Scopes(self.tree, walrus=b":=" in code)
        self._lines = re.split(rb"\r\n|\r|\n", code)  # lines as the parsers count them
        self._index: dict[Place, tuple[ast.AST, Scope, ast.Attribute | None]] = {}
        self._walk(self.tree, self.scopes.global_scope, None, [])

    def qualified_names(self, place: Place) -> set[tuple[str, int]]:
        found = self._index.get(place)
        if found is None:
            return set()
        node, scope, top = found
        return self.scopes.qualified_names(node, scope, top)

    def _column(self, line: int, offset: int) -> int:
        """The character column of a byte offset (LibCST counts characters)."""
        text = self._lines[line - 1] if line <= len(self._lines) else b""
        head = text[:offset]
        return offset if head.isascii() else len(head.decode("utf-8", "replace"))

    def _walk(self, node: ast.AST, scope: Scope, top: Any, chain: list[ast.AST]) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return  # LibCST gives names inside imports no scope: none here either
        if isinstance(node, _INDEXED):
            n: Any = node
            place = (
                type(node).__name__,
                n.lineno,
                self._column(n.lineno, n.col_offset),
                n.end_lineno,
                self._column(n.end_lineno, n.end_col_offset),
            )
            self._index.setdefault(place, (node, scope, _top(node, chain)))
        chain.append(node)
        for child, child_scope in scoped_children(node, scope, self.scopes):
            self._walk(child, child_scope, top, chain)
        chain.pop()


def _top(node: ast.AST, chain: list[ast.AST]) -> ast.Attribute | None:
    """LibCST's top-level attribute of the name at the root of ``node``: the outermost
    attribute above it, not beyond a call (see Scopes.qualified_names)."""
    cur, top = node, node if isinstance(node, ast.Attribute) else None
    while isinstance(cur, ast.Attribute):
        cur = cur.value
    if not isinstance(cur, ast.Name):
        return None
    for above in reversed(chain):
        if isinstance(above, (ast.Call, ast.stmt)):
            break
        if isinstance(above, ast.Attribute):
            top = above
    return top


def scoped_children(node: ast.AST, scope: Scope, scopes: Scopes) -> Iterator[tuple[ast.AST, Scope]]:
    """Child nodes with the scope each is read in."""
    if isinstance(node, (*FUNCTIONS, ast.Lambda)):
        inner = scopes.scope_of(node, scope)
        for child in getattr(node, "decorator_list", []):
            yield child, scope
        yield node.args, scope
        if isinstance(node, ast.Lambda):
            yield node.body, inner
            return
        if node.returns is not None:
            yield node.returns, scope
        for stmt in node.body:
            yield stmt, inner
    elif isinstance(node, ast.ClassDef):
        for child in (*node.decorator_list, *node.bases, *node.keywords):
            yield child, scope
        inner = scopes.scope_of(node, scope)
        for stmt in node.body:
            yield stmt, inner
    elif isinstance(node, COMPREHENSIONS):
        inner = scopes.scope_of(node, scope)
        results = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        for child in results:
            yield child, inner
        for i, gen in enumerate(node.generators):
            yield gen.target, inner
            yield gen.iter, scope if i == 0 else inner
            for cond in gen.ifs:
                yield cond, inner
    else:
        for child in ast.iter_child_nodes(node):
            yield child, scope
