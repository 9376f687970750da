"""The bindings of one scope, found by walking its own statements in LibCST's order (for
engine/scopes.py): names bound by assignments, imports, definitions, parameters, ``for``/``with``/
``except`` targets and ``global``/``nonlocal``, and where LibCST's count of binding statements
goes up (which orders bindings against reads). Expressions are only walked in files with an
assignment expression (``:=``), the only binding an expression can make."""

from __future__ import annotations

import ast
from typing import Protocol

from ms_fmk_transplt.engine.scope_model import (
    COMPREHENSIONS,
    FUNCTIONS,
    Position,
    Scope,
    ScopeNode,
    UnsupportedScope,
)
from ms_fmk_transplt.engine.statements import tree_statements


class ScopeTable(Protocol):
    """What the walker needs of the scopes of a module (engine/scopes.py's Scopes): it opens
    nested scopes there and analyses those that bind names outside themselves."""

    walrus: bool  # the file may hold `:=`: expressions can bind names
    # PEP 695 statements bind their name and are not analysed (the span pass leaves them as
    # written) instead of raising UnsupportedScope
    tolerate_generics: bool
    eager: frozenset[int]  # scope nodes analysed with their parent (global/nonlocal)
    global_scope: Scope

    def scope_of(self, node: ScopeNode, parent: Scope) -> Scope: ...

    def analyse(self, scope: Scope) -> Scope: ...


def walk_global(scopes: ScopeTable, piece: ast.Module) -> None:
    """Adds the bindings of a piece of the module to its global scope (in source order)."""
    scopes.eager = declaring_scopes(piece)
    ScopeWalker(scopes, scopes.global_scope).statements(piece.body)


def declaring_scopes(module: ast.Module) -> frozenset[int]:
    """ids of the scope nodes with a global/nonlocal statement, and of their enclosing scopes
    (found once per tree: engine/statements.py)."""
    return tree_statements(module).declaring


def _end(node: ast.expr | ast.stmt) -> Position:
    # (a parsed node has its end: typeshed makes it Optional for nodes built by hand)
    return node.end_lineno or node.lineno, node.end_col_offset or 0


def _start(node: ast.expr | ast.stmt) -> Position:
    return node.lineno, node.col_offset


def _block_start(body: list[ast.stmt], header_line: int) -> Position:
    """Where a block starts: after its header, before anything read in it (decorators too)."""
    first = body[0]
    decorators = getattr(first, "decorator_list", None)
    line = min([first.lineno, *(d.lineno for d in decorators)]) if decorators else first.lineno
    return (line, first.col_offset) if line == header_line else (line, -1)


class ScopeWalker:
    """Walks the statements of one scope in LibCST's order, recording its bindings and where
    its count of binding statements goes up."""

    def __init__(self, scopes: ScopeTable, scope: Scope) -> None:
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
            self.comprehension(node)

    def parameters(self, args: ast.arguments) -> None:
        for arg in [*args.posonlyargs, *args.args]:
            self.scope.bind(arg.arg, arg)
        if args.vararg:
            self.scope.bind(args.vararg.arg, args.vararg)
        for arg in args.kwonlyargs:
            self.scope.bind(arg.arg, arg)
        if args.kwarg:
            self.scope.bind(args.kwarg.arg, args.kwarg)

    def comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp
    ) -> None:
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
            self.generic(node, node.name, "type parameters")
            return
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
            self.generic(node, node.name, "type parameters")
            return
        self.scope.bind(node.name, node)
        for child in (*node.decorator_list, *node.bases, *(k.value for k in node.keywords)):
            self.expr(child)
        self.nested(node)
        self.scope.bump(_end(node))

    def stmt_TypeAlias(self, node: ast.stmt) -> None:
        name = getattr(node, "name", None)
        if isinstance(name, ast.Name):
            self.generic(node, name.id, "type alias")

    def generic(self, node: ast.stmt, name: str, what: str) -> None:
        """A statement with PEP 695 type parameters, or a ``type`` alias, whose annotation scope
        is not modelled: UnsupportedScope, or (``tolerate_generics``) it binds its name and
        nothing inside it is analysed (the span pass leaves it as written: spans/walker.py)."""
        if not self.scopes.tolerate_generics:
            raise UnsupportedScope(what)
        self.scope.bind(name, node)
        self.scope.bump(_end(node))

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
            raise UnsupportedScope("nonlocal at module level", compile_error=True)
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
            items: list[ast.expr | ast.keyword] = [*node.args, *node.keywords]
            if node.args and node.keywords:
                items.sort(key=lambda n: (n.lineno, n.col_offset))
            for item in items:
                self.expr(item)
        else:
            for child in ast.iter_child_nodes(node):
                self.expr(child)
