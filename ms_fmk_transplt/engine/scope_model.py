"""The model of engine/scopes.py: scopes, the names bound in them, and how a bound name
gives qualified names (LibCST's Scope, Assignment, ImportAssignment and BuiltinAssignment)."""

from __future__ import annotations

import ast
import bisect
import builtins
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Union

IMPORT, BUILTIN, LOCAL = 0, 1, 2  # sources of a qualified name, in order of preference

QualifiedName = tuple[str, int]  # (name, source)
Position = tuple[int, int]  # (line, column)
ScopeNode = Union[
    ast.Module,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ClassDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
]
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class UnsupportedScope(Exception):
    """Code whose scoping this module does not model, or that CPython refuses to compile
    (``compile_error``: nonlocal at module level)."""

    def __init__(self, reason: str, compile_error: bool = False) -> None:
        super().__init__(reason)
        self.compile_error = compile_error


def chosen_name(names: set[QualifiedName], dotted: str | None) -> str | None:
    """What the engine takes an expression to be: a torch name among its qualified names
    (imported ones first), else the first of them; with none, a dotted ``torch.x`` is taken
    literally (a snippet without its imports); else nothing is known."""
    if names:
        ordered = sorted(names, key=lambda q: (q[1] != IMPORT, q[0]))
        for name, _ in ordered:
            if name == "torch" or name.startswith("torch."):
                return name
        return ordered[0][0]
    if dotted and (dotted == "torch" or dotted.startswith("torch.")):
        return dotted
    return None


def full_name(node: ast.AST) -> str | None:
    """Dotted name of an expression: ``a.b`` for ``a.b``, ``a().b``, ``a[0].b`` (as LibCST's
    ``get_full_name_for_node``: a chain rooted in anything else gives ``None.b``)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{full_name(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return full_name(node.func)
    if isinstance(node, ast.Subscript):
        return full_name(node.value)
    return None


def dotted_names(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """The dotted prefixes of an attribute chain, longest first (``a.b.c``, ``a.b``, ``a``); a
    call in the chain ends the attribute's own name (``a.b().c`` gives ``a.b``, ``a``)."""
    if isinstance(node, ast.Name):
        yield node.id, node
        return
    if not isinstance(node, ast.Attribute):
        return
    value = node.value
    if isinstance(value, ast.Call):
        if isinstance(value.func, (ast.Attribute, ast.Name)):
            yield from dotted_names(value.func)
    elif isinstance(value, (ast.Attribute, ast.Name)):
        inner = dotted_names(value)
        first = next(inner, None)
        if first is not None:
            yield f"{first[0]}.{node.attr}", node
            yield first
            yield from inner


@dataclass(eq=False)
class Binding:
    """A name bound in a scope: by an import, a builtin, or anything else (local)."""

    name: str
    scope: Scope
    index: int  # LibCST's count of binding statements in the scope when this one was made
    node: ast.AST | None = None  # the binding node (a Store Name, a def, an import, ...)
    imported: ast.Import | ast.ImportFrom | None = None
    builtin: bool = False

    def qualified_names(self, full: str) -> set[QualifiedName]:
        if self.builtin:
            return {(f"builtins.{self.name}", BUILTIN)}
        if self.imported is None:
            prefix = self.scope.prefix
            return {(f"{prefix}.{full}" if prefix else full, LOCAL)}
        return _imported_names(self.imported, full)


def _imported_names(stmt: ast.Import | ast.ImportFrom, full: str) -> set[QualifiedName]:
    module = ""
    if isinstance(stmt, ast.ImportFrom):
        module = "." * (stmt.level or 0) + (stmt.module or "")
    out: set[QualifiedName] = set()
    for alias in stmt.names:
        if alias.name == "*":
            continue
        parts = alias.name.split(".")
        for i in range(len(parts), 0, -1):
            real = ".".join(parts[:i])
            bound = alias.asname or real
            if module.endswith("."):
                real = module + real
            elif module:
                real = f"{module}.{real}"
            if full.startswith(bound):
                rest = full.split(bound, 1)[1]
                if rest and not rest.startswith("."):
                    continue
                rest = rest.lstrip(".")
                out.add((f"{real}.{rest}" if rest else real, IMPORT))
                break
    return out


class Scope:
    """One scope: its bindings, found on first use by walking its own statements."""

    def __init__(self, kind: str, parent: Scope | None, node: ScopeNode, name: str | None) -> None:
        self.kind = kind  # "builtins", "global", "function", "class", "comprehension"
        self.parent: Scope = parent if parent is not None else self
        self.node = node
        self.globals: Scope = self if kind in ("global", "builtins") else self.parent.globals
        self.bindings: dict[str, list[Binding]] = {}
        self.overwrites: dict[str, Scope] = {}
        self.count = 0  # LibCST's _assignment_count: bumped as each binding statement ends
        self.bumps: list[Position] = []  # where the count went up, in source order
        self.last_read: list[tuple[Position, Position]] = []  # comprehension results: read last
        self.analysed = kind == "builtins"
        self.sealed = False  # complete: later walks must not bind names in it again
        if kind in ("builtins", "global"):
            self.prefix = ""
        elif kind == "function":
            self.prefix = ".".join(filter(None, [self.parent.prefix, name, "<locals>"]))
        elif kind == "class":
            self.prefix = ".".join(filter(None, [self.parent.prefix, name]))
        else:
            self.prefix = ".".join(filter(None, [self.parent.prefix, "<comprehension>"]))

    # -- lookups (LibCST's Scope.__contains__ / _resolve_scope_for_access) --------------------
    def visible_parent(self, first: Scope | None = None) -> Scope:
        parent = first if first is not None else self.parent
        while parent.kind == "class":  # class bodies are invisible to nested scopes
            parent = parent.parent
        return parent

    def has(self, name: str) -> bool:
        if self.kind == "builtins":
            return hasattr(builtins, name)
        if name in self.overwrites:
            return self.overwrites[name].has(name)
        if self.bindings.get(name):
            return True
        return self.visible_parent().has(name)

    def resolve(self, name: str) -> list[Binding]:
        if self.kind == "builtins":
            if name not in self.bindings and hasattr(builtins, name):
                self.bindings[name] = [Binding(name, self, -1, builtin=True)]
            return self.bindings.get(name, [])
        if name in self.overwrites:
            return self.visible_parent(self.overwrites[name]).resolve(name)
        if name in self.bindings:
            return self.bindings[name]
        return self.visible_parent().resolve(name)

    def bind(
        self, name: str, node: ast.AST | None, imported: ast.Import | ast.ImportFrom | None = None
    ) -> None:
        target = self
        while name in target.overwrites:  # global / nonlocal
            target = target.visible_parent(target.overwrites[name])
        if target.sealed:
            return
        target.bindings.setdefault(name, []).append(
            Binding(name, target, target.count, node, imported)
        )

    def bump(self, where: Position) -> None:
        self.count += 1
        self.bumps.append(where)

    def read_index(self, node: ast.expr) -> int:
        """LibCST's count when it reads ``node``: the binding statements ended before it."""
        where = (node.lineno, node.col_offset)
        for start, end in self.last_read:
            if start <= where < end:
                return self.count
        return bisect.bisect_right(self.bumps, where)
