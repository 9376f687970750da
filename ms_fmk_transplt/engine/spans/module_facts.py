"""What the span pass must know about the whole module before it walks any statement: every
import statement (aliases are anchors; rules resolve names through them), the bindings of the
global scope, and the module's top-level statements grouped by line (where ``import
torch_npu`` goes). Gathered piece by piece (see chunks.py), keeping only small nodes."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ms_fmk_transplt.engine.scope_bindings import walk_global
from ms_fmk_transplt.engine.scope_model import Scope
from ms_fmk_transplt.engine.scopes import Scopes
from ms_fmk_transplt.engine.spans.anchors import import_statements
from ms_fmk_transplt.engine.spans.source_text import SourceText
from ms_fmk_transplt.engine.statements import imports_in

SIMPLE = (
    ast.Expr,
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.Import,
    ast.ImportFrom,
    ast.Pass,
    ast.Break,
    ast.Continue,
    ast.Return,
    ast.Raise,
    ast.Global,
    ast.Nonlocal,
    ast.Delete,
    ast.Assert,
)


@dataclass
class Line:
    """One top-level statement line of the module: a compound statement, or the simple
    statements of one line (``a = 1; b = 2``)."""

    simple: bool
    first: int  # line of the first statement (of its ``def``, not its decorators)
    last: int
    decorator_line: int  # the line of a decorated definition's first ``@`` (0: none)
    imports: list[ast.Import | ast.ImportFrom]  # run when the module is imported
    docstring: bool
    future: bool
    import_only: bool  # simple statements that are all imports


@dataclass
class ModuleFacts:
    source: SourceText
    imports: list[ast.Import | ast.ImportFrom] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    scopes: Scopes | None = None

    @property
    def global_scope(self) -> Scope:
        assert self.scopes is not None
        return self.scopes.global_scope

    def add(self, tree: ast.Module) -> None:
        """Gathers what the next piece of the module holds."""
        self.imports.extend(import_statements(tree))
        self.lines.extend(self._line(line) for line in statement_lines(tree.body))
        if self.scopes is None:
            self.scopes = Scopes(tree, walrus=b":=" in self.source.data)
            self.scopes.tolerate_generics = True  # (their statements are left as written)
        walk_global(self.scopes, tree)

    def done(self) -> None:
        if self.scopes is not None:
            self.scopes.seal_global()

    def _line(self, stmts: list[ast.stmt]) -> Line:
        first = stmts[0]
        simple = isinstance(first, SIMPLE)  # (no decorators; imports, when the first is one)
        return Line(
            simple=simple,
            first=first.lineno,
            last=stmts[-1].end_lineno or first.lineno,
            decorator_line=0 if simple else self._decorator_line(first),
            imports=module_level_imports(stmts),
            docstring=self._is_docstring(stmts),
            future=isinstance(first, ast.ImportFrom)
            and all(isinstance(s, ast.ImportFrom) and s.module == "__future__" for s in stmts),
            import_only=isinstance(first, (ast.Import, ast.ImportFrom))
            and all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in stmts),
        )

    def _decorator_line(self, stmt: ast.stmt) -> int:
        """The line of the first ``@`` of a decorated definition (its expression may start on a
        later line: ``@(\n    dec)``), or 0."""
        decorators: list[ast.expr] = getattr(stmt, "decorator_list", None) or []
        if not decorators:
            return 0
        source = self.source
        line = decorators[0].lineno
        while line > 1:
            text = source.data[source.starts[line - 1] : source.line_end(line)]
            if text.lstrip(b" \t\f").startswith(b"@"):
                break
            line -= 1
        return line

    def _is_docstring(self, stmts: list[ast.stmt]) -> bool:
        if len(stmts) != 1 or not isinstance(stmts[0], ast.Expr):
            return False
        value = stmts[0].value
        if isinstance(value, ast.Constant):
            return isinstance(value.value, (str, bytes))
        # a single f-string is not a docstring here; an f-string joined to others is
        return isinstance(value, ast.JoinedStr) and self.source.string_token(value) is None


def statement_lines(body: list[ast.stmt]) -> list[list[ast.stmt]]:
    """Module statements grouped by line (``a = 1; b = 2`` is one line)."""
    out: list[list[ast.stmt]] = []
    for stmt in body:
        if (
            out
            and isinstance(stmt, SIMPLE)
            and isinstance(out[-1][-1], SIMPLE)
            and stmt.lineno == out[-1][-1].end_lineno
        ):
            out[-1].append(stmt)
        else:
            out.append([stmt])
    return out


_NO_BLOCKS = frozenset({ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Pass, ast.Return})


def module_level_imports(stmts: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Import statements executed when the module is imported (not inside def/class)."""
    if all(type(s) in _NO_BLOCKS for s in stmts):
        return []  # (most lines: no import, no block that could hold one)
    return imports_in(stmts)
