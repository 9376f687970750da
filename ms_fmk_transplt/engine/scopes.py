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

A scope is analysed on first use, statement by statement: its bindings, and the places where
LibCST's count of binding statements goes up, which orders bindings against reads. Expressions
are only walked in files with an assignment expression (``:=``).
"""

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
    """Code whose scoping this module does not model (PEP 695 type parameters)."""


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

    def __init__(self, kind: str, parent: Scope | None, node: ast.AST, name: str | None) -> None:
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

    def bind(self, name: str, node: ast.AST | None, imported=None) -> None:
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

    def read_index(self, node: ast.AST) -> int:
        """LibCST's count when it reads ``node``: the binding statements ended before it."""
        where = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
        for start, end in self.last_read:
            if start <= where < end:
                return self.count
        return bisect.bisect_right(self.bumps, where)


class Scopes:
    """The scopes of one module (or of one piece of it, see engine/spans/chunks.py, sharing
    the global scope gathered from all pieces); ``qualified_names(node, scope, top)`` is
    LibCST's answer."""

    def __init__(
        self, module: ast.Module, walrus: bool = True, global_scope: Scope | None = None
    ) -> None:
        self.module = module
        self.walrus = walrus  # the file may hold `:=`: expressions can bind names
        if global_scope is None:
            builtin = Scope("builtins", None, module, None)
            global_scope = Scope("global", builtin, module, None)
            builtin.globals = global_scope
        self.global_scope = global_scope
        self._scopes: dict[int, Scope] = {id(module): self.global_scope}
        self._cache: dict[tuple, set[QualifiedName]] = {}
        self.sealer: Scopes | None = None  # the Scopes that gathered a shared global scope
        # scopes holding `global`/`nonlocal` (and their enclosing scopes): analysed with their
        # parent, since they bind names in it
        self.eager: set[int] = _declaring_scopes(module)

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
            if scope.sealed and scope is not self.sealer:
                continue  # shared by the pieces of a module: released with the facts
            scope.bindings.clear()
            scope.overwrites.clear()
        self._scopes.clear()
        self._cache.clear()

    def seal_global(self) -> None:
        """The global scope holds the bindings of every piece of the module."""
        self.sealer = self
        scope = self.global_scope
        scope.analysed = scope.sealed = True
        scope.bumps.sort()

    def analyse(self, scope: Scope) -> Scope:
        if not scope.analysed:
            scope.analysed = True
            _Walker(self, scope).region()
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
        key = (id(scope), full)
        names = self._cache.get(key)
        if names is None:
            names = self._cache[key] = self._full(node, scope, full)
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
        name, read_node = root.id, root
        if top is not None:
            for dotted, candidate in dotted_names(top):
                if scope.has(dotted):
                    name, read_node = dotted, candidate
                    break
        if read_node is not node:
            return None
        return name, scope.read_index(root)

    @staticmethod
    def _referents(scope: Scope, name: str, index: int) -> list[Binding]:
        """The bindings a read sees: those made before it in its own scope, all those of
        enclosing scopes; with none before it, those of the enclosing scope."""
        bindings = scope.resolve(name)
        previous = [b for b in bindings if b.scope is not scope or b.index < index]
        if not previous and bindings and scope.parent is not scope:
            previous = scope.parent.resolve(name)
        return previous


def walk_global(scopes: Scopes, piece: ast.Module) -> None:
    """Adds the bindings of a piece of the module to its global scope (in source order)."""
    scopes.eager = _declaring_scopes(piece)
    _Walker(scopes, scopes.global_scope).statements(piece.body)


def _declaring_scopes(module: ast.Module) -> set[int]:
    """ids of the scope nodes with a global/nonlocal statement, and of their enclosing scopes."""
    found: set[int] = set()

    def visit(body: list[ast.stmt], chain: tuple[int, ...]) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.Global, ast.Nonlocal)):
                found.update(chain)
            elif isinstance(stmt, (*FUNCTIONS, ast.ClassDef)):
                visit(stmt.body, (*chain, id(stmt)))
            else:
                for block in _blocks(stmt):
                    visit(block, chain)

    visit(module.body, ())
    return found


def _blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists inside a compound statement, in source order."""
    yield getattr(stmt, "body", None) or []
    for handler in getattr(stmt, "handlers", None) or []:
        yield handler.body
    for case in getattr(stmt, "cases", None) or []:
        yield case.body
    yield getattr(stmt, "orelse", None) or []
    yield getattr(stmt, "finalbody", None) or []


def _end(node: ast.AST) -> Position:
    return node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]


def _start(node: ast.AST) -> Position:
    return node.lineno, node.col_offset  # type: ignore[attr-defined]


def _block_start(body: list[ast.stmt], header_line: int) -> Position:
    """Where a block starts: after its header, before anything read in it (decorators too)."""
    first = body[0]
    decorators = getattr(first, "decorator_list", None)
    line = min([first.lineno, *(d.lineno for d in decorators)]) if decorators else first.lineno
    return (line, first.col_offset) if line == header_line else (line, -1)


class _Walker:
    """Walks the statements of one scope in LibCST's order, recording its bindings and where
    its count of binding statements goes up."""

    def __init__(self, scopes: Scopes, scope: Scope) -> None:
        self.scopes = scopes
        self.scope = scope

    def region(self) -> None:
        node = self.scope.node
        if isinstance(node, ast.Module):
            self.statements(node.body)
        elif isinstance(node, FUNCTIONS):
            self.parameters(node.args)
            self.scope.bump(_block_start(node.body, node.lineno))
            self.statements(node.body)
        elif isinstance(node, ast.Lambda):
            self.parameters(node.args)
            self.scope.bump(_start(node.body))
            self.expr(node.body)
        elif isinstance(node, ast.ClassDef):
            self.statements(node.body)
        else:
            self.comprehension(node)  # type: ignore[arg-type]

    def parameters(self, args: ast.arguments) -> None:
        for arg in [*args.posonlyargs, *args.args]:
            self.scope.bind(arg.arg, arg)
        if args.vararg:
            self.scope.bind(args.vararg.arg, args.vararg)
        for arg in args.kwonlyargs:
            self.scope.bind(arg.arg, arg)
        if args.kwarg:
            self.scope.bind(args.kwarg.arg, args.kwarg)

    def comprehension(self, node) -> None:
        first, *inner = node.generators
        self.target(first.target)
        self.scope.bump(_end(first.target))
        for cond in first.ifs:
            self.expr(cond)
        self.inner_generators(inner)
        results = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        for result in results:
            self.scope.last_read.append((_start(result), _end(result)))
            self.expr(result)

    def inner_generators(self, generators: list[ast.comprehension]) -> None:
        if not generators:
            return
        gen, *rest = generators
        self.target(gen.target)
        self.expr(gen.iter)
        for cond in gen.ifs:
            self.expr(cond)
        self.inner_generators(rest)
        last = generators[-1]
        self.scope.bump(_end(last.ifs[-1] if last.ifs else last.iter))

    def statements(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            method = getattr(self, "stmt_" + type(stmt).__name__, None)
            if method is not None:
                method(stmt)
            elif not isinstance(stmt, (ast.Pass, ast.Break, ast.Continue)):
                for child in ast.iter_child_nodes(stmt):
                    self.expr(child)

    def nested(self, node: ScopeNode) -> None:
        """A scope opened here: analysed now only when it binds names outside itself."""
        scope = self.scopes.scope_of(node, self.scope)
        if id(node) in self.scopes.eager:
            self.scopes.analyse(scope)

    # -- statements ---------------------------------------------------------------------------
    def stmt_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if getattr(node, "type_params", None):
            raise UnsupportedScope("type parameters")
        self.scope.bind(node.name, node)
        self.defaults(node.args)
        self.nested(node)
        for decorator in node.decorator_list:
            self.expr(decorator)
        if node.returns is not None:
            self.expr(node.returns)
        self.scope.bump(_end(node))

    stmt_AsyncFunctionDef = stmt_FunctionDef

    def defaults(self, args: ast.arguments) -> None:
        """Defaults and annotations are read in the scope that defines the function."""
        if not self.scopes.walrus:
            return
        for arg in [*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg]:
            if arg is not None and arg.annotation is not None:
                self.expr(arg.annotation)
        for default in [*args.defaults, *args.kw_defaults]:
            if default is not None:
                self.expr(default)

    def stmt_ClassDef(self, node: ast.ClassDef) -> None:
        if getattr(node, "type_params", None):
            raise UnsupportedScope("type parameters")
        self.scope.bind(node.name, node)
        for child in (*node.decorator_list, *node.bases, *(k.value for k in node.keywords)):
            self.expr(child)
        self.nested(node)
        self.scope.bump(_end(node))

    def stmt_TypeAlias(self, node: ast.AST) -> None:
        raise UnsupportedScope("type alias")

    def stmt_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name == "*":
                continue
            if alias.asname:
                self.scope.bind(alias.asname, node, node)
                continue
            parts = alias.name.split(".")
            for i in range(len(parts), 0, -1):
                self.scope.bind(".".join(parts[:i]), node, node)
        self.scope.bump(_end(node))

    stmt_ImportFrom = stmt_Import

    def stmt_Global(self, node: ast.Global | ast.Nonlocal) -> None:
        if self.scope.kind != "global":
            target = self.scope.globals if isinstance(node, ast.Global) else self.scope.parent
            for name in node.names:
                self.scope.overwrites[name] = target
        elif isinstance(node, ast.Nonlocal):
            raise UnsupportedScope("nonlocal at module level")
        self.scope.bump(_end(node))

    stmt_Nonlocal = stmt_Global

    def stmt_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self.target(target)
        self.expr(node.value)
        self.scope.bump(_end(node))

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        self.target(node.target)
        self.expr(node.value)
        self.scope.bump(_end(node))

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.target(node.target)
        self.expr(node.annotation)
        if node.value is not None:
            self.expr(node.value)
        self.scope.bump(_end(node))

    def stmt_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.target(node.target)
        self.scope.bump(_end(node.target))
        self.expr(node.iter)
        self.statements(node.body)
        self.statements(node.orelse)

    stmt_AsyncFor = stmt_For

    def stmt_While(self, node: ast.While | ast.If) -> None:
        self.expr(node.test)
        self.statements(node.body)
        self.statements(node.orelse)

    stmt_If = stmt_While

    def stmt_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.expr(item.context_expr)
            if item.optional_vars is not None:
                self.target(item.optional_vars)
                self.scope.bump(_end(item.optional_vars))
                self.scope.bump(_end(item.optional_vars))
            else:
                self.scope.bump(_end(item.context_expr))
        self.statements(node.body)

    stmt_AsyncWith = stmt_With

    def stmt_Try(self, node: ast.Try) -> None:
        self.statements(node.body)
        for handler in node.handlers:
            if handler.type is not None:
                self.expr(handler.type)
            if handler.name:
                self.scope.bind(handler.name, handler)
                self.scope.bump(_block_start(handler.body, handler.lineno))
            self.statements(handler.body)
        self.statements(node.orelse)
        self.statements(node.finalbody)

    stmt_TryStar = stmt_Try

    def stmt_Match(self, node: ast.Match) -> None:
        self.expr(node.subject)
        for case in node.cases:
            if case.guard is not None:
                self.expr(case.guard)
            self.statements(case.body)

    # -- expressions: only bindings matter (targets, and `:=` where the file has one) ---------
    def target(self, node: ast.AST) -> None:
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                self.scope.bind(node.id, node)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for elt in node.elts:
                self.target(elt)
        elif isinstance(node, ast.Starred):
            self.target(node.value)
        else:
            self.expr(node)

    def expr(self, node: ast.AST | None) -> None:
        if node is None or not self.scopes.walrus:
            return
        if isinstance(node, ast.NamedExpr):
            self.target(node.target)
            self.expr(node.value)
            self.scope.bump(_end(node))
        elif isinstance(node, ast.Lambda):
            self.defaults(node.args)
            self.nested(node)
        elif isinstance(node, COMPREHENSIONS):
            self.expr(node.generators[0].iter)
            self.nested(node)
        elif isinstance(node, ast.IfExp):  # LibCST's order
            self.expr(node.body)
            self.expr(node.test)
            self.expr(node.orelse)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                self.expr(key)
                self.expr(value)
        elif isinstance(node, ast.Call):
            self.expr(node.func)
            items = [*node.args, *node.keywords]
            if node.args and node.keywords:
                items.sort(key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]
            for item in items:
                self.expr(item)
        else:
            for child in ast.iter_child_nodes(node):
                self.expr(child)
