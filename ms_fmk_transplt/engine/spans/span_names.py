"""Name resolution for the span pass: what an expression refers to (``qname``), resolved by
engine/scopes.py, plus the cheap checks that
spare most resolutions. Part of SpanContext (engine/spans/span_context.py), which holds the
state used here: ``scopes``, ``tables``, ``import_statements``, ``import_depth`` and the walk
stack (``scope_of``, ``_ancestors``)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ms_fmk_transplt.engine.scope_model import chosen_name, full_name

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.scope_model import Scope
    from ms_fmk_transplt.engine.scopes import Scopes
    from ms_fmk_transplt.tables import Tables


class SpanNames:
    """Mixed into SpanContext: name resolution."""

    scopes: Scopes
    tables: Tables
    import_statements: list[ast.Import | ast.ImportFrom]
    import_depth: int
    _qnames: dict[int, str | None]
    _names: dict[int, tuple[str, ...]]
    _dotted_roots: frozenset[str] | None
    _import_bound: dict[str, str] | None
    _bound_anywhere: dict[str, str] | None

    def scope_of(self, node: ast.AST) -> Scope:  # pragma: no cover - SpanContext's
        raise NotImplementedError

    def _ancestors(self, node: ast.AST) -> list[ast.AST]:  # pragma: no cover - SpanContext's
        raise NotImplementedError

    def qname(self, node: ast.AST) -> str | None:
        """The fully qualified name an expression refers to, resolved through imports (the LibCST
        stages ask engine/context.py, which gives the same answer for their nodes)."""
        key = id(node)
        if key in self._qnames:
            return self._qnames[key]
        result = self._qname(node)
        self._qnames[key] = result
        return result

    def _qname(self, node: ast.AST) -> str | None:
        if self.import_depth:
            return None
        names = self.scopes.qualified_names(node, self.scope_of(node), self._top(node))
        if names:  # (the dotted name as written counts only when nothing is bound)
            return chosen_name(names, None)
        literal = isinstance(node, (ast.Name, ast.Attribute))
        return chosen_name(names, full_name(node) if literal else None)

    def _top(self, node: ast.AST) -> ast.Attribute | None:
        """The outermost attribute above the name at the root of ``node``, not beyond a call:
        it decides how that read is named when a dotted import (``import torch.cuda``)
        binds a prefix of the chain. Only computed when one does."""
        cur, top = node, None
        if isinstance(cur, ast.Attribute):
            top = cur
        while isinstance(cur, ast.Attribute):
            cur = cur.value
        if not isinstance(cur, ast.Name) or cur.id not in self.dotted_roots:
            return None
        for ancestor in self._ancestors(node):
            if isinstance(ancestor, (ast.Call, ast.stmt)):
                break
            if isinstance(ancestor, ast.Attribute):
                top = ancestor
        return top

    @property
    def dotted_roots(self) -> frozenset[str]:
        """First names of the dotted names bound by ``import a.b`` statements of the file."""
        if self._dotted_roots is None:
            self._dotted_roots = frozenset(
                a.name.split(".")[0]
                for stmt in self.import_statements
                if isinstance(stmt, ast.Import)
                for a in stmt.names
                if a.asname is None and "." in a.name
            )
        return self._dotted_roots

    def names_in(self, node: ast.AST) -> tuple[str, ...]:
        """The identifiers of a dotted expression, last first (cheap: no resolution)."""
        key = id(node)
        names = self._names.get(key)
        if names is None:
            out = []
            cur = node
            while isinstance(cur, ast.Attribute):
                out.append(cur.attr)
                cur = cur.value
            if isinstance(cur, ast.Name):
                out.append(cur.id)
            names = self._names[key] = tuple(out)
        return names

    @staticmethod
    def last_name(node: ast.AST) -> str | None:
        """The last identifier of a dotted expression (``c`` of ``a.b.c``)."""
        if isinstance(node, ast.Attribute):
            return node.attr
        if isinstance(node, ast.Name):
            return node.id
        return None

    @property
    def import_bound(self) -> dict[str, str]:
        """Names bound by import statements anywhere in the file -> what they import."""
        if self._import_bound is None:
            bound: dict[str, str] = {}
            for stmt in self.import_statements:
                if isinstance(stmt, ast.Import):
                    for a in stmt.names:
                        bound[a.asname if a.asname else a.name.split(".")[0]] = a.name
                elif stmt.module is not None and stmt.names[0].name != "*":
                    for a in stmt.names:
                        bound[a.asname or a.name] = f"{stmt.module}.{a.name}"
            self._import_bound = bound
        return self._import_bound

    def root_qname(self, node: ast.AST) -> str | None:
        """Qualified name of the leftmost name of an attribute chain / call receiver."""
        while True:
            if isinstance(node, ast.Attribute):
                node = node.value
            elif isinstance(node, ast.Call):
                node = node.func
            elif isinstance(node, ast.Subscript):
                node = node.value
            else:
                break
        return self.qname(node) if isinstance(node, ast.Name) else None

    def is_foreign(self, node: ast.AST) -> bool:
        """True for expressions rooted in a non-PyTorch GPU library (numba.cuda, cupy, ...)."""
        if not self._may_be_foreign(node):
            return False
        root = self.root_qname(node)
        return bool(root and root.split(".")[0] in self.tables.foreign_roots)

    def _may_be_foreign(self, node: ast.AST) -> bool:
        """Cheap and safe: False only when no qualified name of the root can start with a
        foreign root (it is not one, no import binds it to one, and no enclosing function or
        class is named like one: a local is named ``f.<locals>.x``)."""
        while True:
            if isinstance(node, ast.Attribute):
                node = node.value
            elif isinstance(node, ast.Call):
                node = node.func
            elif isinstance(node, ast.Subscript):
                node = node.value
            else:
                break
        if not isinstance(node, ast.Name):
            return False
        roots = self.tables.foreign_roots
        if node.id in roots:
            return True
        path = self.import_bound_anywhere.get(node.id)
        if path is not None and path.split(".")[0] in roots:
            return True
        return self.scope_of(node).prefix.split(".")[0] in roots

    @property
    def import_bound_anywhere(self) -> dict[str, str]:
        """Every name any import of the file binds -> each path it may bind (the first)."""
        if self._bound_anywhere is None:
            out: dict[str, str] = {}
            for stmt in self.import_statements:
                for a in stmt.names:
                    if isinstance(stmt, ast.ImportFrom):
                        if stmt.module is None or stmt.level or a.name == "*":
                            path = f"{'.' * stmt.level}{stmt.module or ''}.{a.name}"
                        else:
                            path = f"{stmt.module}.{a.name}"
                        name = a.asname or a.name
                    else:
                        path = a.name
                        name = a.asname or a.name.split(".")[0]
                    root = path.split(".")[0]
                    if name not in out or root in self.tables.foreign_roots:
                        out[name] = path
            self._bound_anywhere = out
        return self._bound_anywhere
