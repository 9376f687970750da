"""Qualified names on the stdlib ``ast``: what an expression refers to, through imports and scopes.

The engine decides what to migrate by qualified name: ``th.cuda.synchronize`` after
``import torch as th`` is ``torch.cuda.synchronize``; ``cfg.cuda`` or a local variable named
``cuda`` is not. Until 0.2 LibCST's ScopeProvider/QualifiedNameProvider answered this, which cost
most of a migration's time. This module gives the same answers on the ``ast`` tree (tests compare
the two on real code): a name bound anywhere in a function is local to it; class bodies are
invisible to nested scopes; comprehensions, lambdas and functions are scopes;
``global``/``nonlocal`` redirect bindings; ``import a.b`` binds ``a.b`` and ``a``; a name read in
the scope that binds it sees only the bindings made before the read (else those of the
enclosing scope); an attribute chain is resolved through all bindings of its root.

A scope is analysed on first use, statement by statement (engine/scope_bindings.py): its
bindings, and the places where LibCST's count of binding statements goes up, which orders
bindings against reads.
"""

from __future__ import annotations

import ast

from ms_fmk_transplt.engine.scope_bindings import ScopeWalker, declaring_scopes
from ms_fmk_transplt.engine.scope_model import (
    FUNCTIONS,
    Binding,
    QualifiedName,
    Scope,
    ScopeNode,
    dotted_names,
    full_name,
)

_RELEASED = ast.Module(body=[], type_ignores=[])  # the node of a released scope


class Scopes:
    """The scopes of one module (or of one piece of it, see safety/chunks.py, sharing
    the global scope gathered from all pieces); ``qualified_names(node, scope, top)`` is
    LibCST's answer."""

    def __init__(
        self, module: ast.Module, walrus: bool = True, global_scope: Scope | None = None
    ) -> None:
        self.module = module
        self.walrus = walrus  # the file may hold `:=`: expressions can bind names
        self.tolerate_generics = False  # see scope_bindings.ScopeTable
        if global_scope is None:
            builtin = Scope("builtins", None, module, None)
            global_scope = Scope("global", builtin, module, None)
            builtin.globals = global_scope
        self.global_scope = global_scope
        self._scopes: dict[int, Scope] = {id(module): self.global_scope}
        # (id(scope), name read, LibCST count at the read) or (id(scope), dotted name)
        self._cache: dict[tuple[int, str, int] | tuple[int, str], set[QualifiedName]] = {}
        self.sealer: Scopes | None = None  # the Scopes that gathered a shared global scope
        # scopes holding `global`/`nonlocal` (and their enclosing scopes): analysed with their
        # parent, since they bind names in it
        self.eager: frozenset[int] = declaring_scopes(module)

    def scope_of(self, node: ScopeNode, parent: Scope) -> Scope:
        """The scope a function/class/lambda/comprehension node opens inside ``parent``."""
        scope = self._scopes.get(id(node))
        if scope is None:
            if isinstance(node, FUNCTIONS):
                scope = Scope("function", parent, node, node.name)
            elif isinstance(node, ast.Lambda):
                scope = Scope("function", parent, node, None)
            elif isinstance(node, ast.ClassDef):
                scope = Scope("class", parent, node, node.name)
            else:
                scope = Scope("comprehension", parent, node, None)
            self._scopes[id(node)] = scope
        return scope

    def release(self) -> None:
        """Breaks the reference cycles between scopes and their bindings, so that a file's
        trees are freed as soon as the pass is done, without the cyclic garbage collector."""
        for scope in [*self._scopes.values(), self.global_scope.parent]:
            if scope.sealed and self is not self.sealer:
                continue  # shared by the pieces of a module: released with the facts
            scope.bindings.clear()
            scope.overwrites.clear()
            scope.node = _RELEASED  # the builtin and global scopes refer to each other
        self._scopes.clear()
        self._cache.clear()
        self.sealer = None  # (itself, when it sealed the global scope)

    def seal_global(self) -> None:
        """The global scope holds the bindings of every piece of the module."""
        self.sealer = self
        scope = self.global_scope
        scope.analysed = scope.sealed = True
        scope.bumps.sort()

    def analyse(self, scope: Scope) -> Scope:
        if not scope.analysed:
            scope.analysed = True
            ScopeWalker(self, scope).region()
            scope.bumps.sort()
        return scope

    def _ready(self, scope: Scope) -> Scope:
        """Analyse a scope and every scope it can see."""
        cur = scope
        while cur.kind != "builtins":
            self.analyse(cur)
            cur = cur.parent
        return scope

    # -- qualified names (LibCST's Scope.get_qualified_names_for) ----------------------------
    def qualified_names(
        self, node: ast.AST, scope: Scope, top: ast.Attribute | None = None
    ) -> set[QualifiedName]:
        """``top``: the outermost attribute above the name at the root of ``node`` that is not
        beyond a call (LibCST names the read of ``a`` in ``a.b.c`` by the longest bound prefix
        of that chain)."""
        self._ready(scope)
        read = self._read_at(node, scope, top)
        if read is not None:
            key = (id(scope), *read)
            names = self._cache.get(key)
            if names is None:
                names = self._cache[key] = {
                    q for b in self._referents(scope, *read) for q in b.qualified_names(b.name)
                }
            return names
        full = full_name(node)
        if full is None:
            return set()
        if isinstance(node, ast.Name):  # a binding's own name: only its own binding
            return self._full(node, scope, full)
        full_key = (id(scope), full)
        names = self._cache.get(full_key)
        if names is None:
            names = self._cache[full_key] = self._full(node, scope, full)
        return names

    def _full(self, node: ast.AST, scope: Scope, full: str) -> set[QualifiedName]:
        """Through the bindings of the longest prefix of the dotted name that is bound."""
        bindings: list[Binding] = []
        prefix: str | None = full
        while prefix:
            if scope.has(prefix):
                bindings = scope.resolve(prefix)
                break
            cut = prefix.rfind(".")
            prefix = None if cut == -1 else prefix[:cut]
        for b in bindings:
            if not b.builtin and b.node is node:
                return b.qualified_names(full)
        out: set[QualifiedName] = set()
        for b in bindings:
            out |= b.qualified_names(full)
        return out

    def _read_at(
        self, node: ast.AST, scope: Scope, top: ast.Attribute | None
    ) -> tuple[str, int] | None:
        """When ``node`` is the node of a read (LibCST's Access): the name read and LibCST's
        count at the read."""
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name) or isinstance(root.ctx, ast.Store):
            return None
        name = root.id
        read_node: ast.AST = root
        if top is not None:
            for dotted, candidate in dotted_names(top):
                if scope.has(dotted):
                    name, read_node = dotted, candidate
                    break
        if read_node is not node:
            return None
        return name, scope.read_index(root)

    def bindings_read(self, node: ast.Name, scope: Scope) -> list[Binding]:
        """The bindings a read of a plain name in ``scope`` sees."""
        self._ready(scope)
        return self._referents(scope, node.id, scope.read_index(node))

    @staticmethod
    def _referents(scope: Scope, name: str, index: int) -> list[Binding]:
        """The bindings a read sees: those made before it in its own scope, all those of
        enclosing scopes; with none before it, those of the enclosing scope."""
        bindings = scope.resolve(name)
        previous = [b for b in bindings if b.scope is not scope or b.index < index]
        if not previous and bindings and scope.parent is not scope:
            previous = scope.parent.resolve(name)
        return previous
