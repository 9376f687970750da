"""Per-file state of the span pass: name resolution, the text of nodes, edits and recording.

The ``ast`` counterpart of engine/context.py: the concerns of the span pass ask it what a node
refers to (``qname``, resolved by engine/scopes.py exactly as LibCST resolved it), what code it
owns (``code``/``snippet``, with or without the edits made so far), and record their changes
as byte-span edits plus the same events and notices as the LibCST pass.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ms_fmk_transplt.engine.options import EngineOptions
from ms_fmk_transplt.engine.recorder import Recorder, snippet_of
from ms_fmk_transplt.engine.scopes import IMPORT, Scope, Scopes, full_name
from ms_fmk_transplt.engine.spans.decline import Decline
from ms_fmk_transplt.engine.spans.source_text import (
    Edits,
    SourceText,
    StringToken,
    Token,
    literal_tokens,
)
from ms_fmk_transplt.events import Operation, Severity
from ms_fmk_transplt.tables import Tables
from ms_fmk_transplt.unsupported_table import Entry

STRING_VALUES = (str, bytes)


@dataclass(eq=False)
class StringPart:
    """One string literal token (LibCST's SimpleString): a whole ``ast.Constant``, or one part
    of an implicit concatenation (``"a" "b"``), which ``ast`` folds into one constant."""

    token: StringToken
    node: ast.AST  # the ast node the token belongs to
    whole: bool  # the token is the whole node (claims on the node apply to it)
    docstring: bool = False
    lines: tuple[int, int] = (0, 0)
    value: object = field(default=None)  # the literal's value, as Python evaluates it
    fstring: bool = False  # an f-string part of a concatenation

    @property
    def key(self) -> object:
        return self.node if self.whole else self


@dataclass(frozen=True)
class Unit:
    """A statement the pass walks: whole (a simple statement) or its header only (the test of an
    ``if``, a function's decorators and defaults, ...). ``ancestors`` enclose it."""

    node: ast.stmt | ast.ExceptHandler | ast.match_case
    header: bool
    ancestors: tuple[ast.AST, ...]
    lines: tuple[int, int]


class SpanContext(Recorder):
    """Everything a span concern needs while the pass walks one file."""

    def __init__(
        self,
        path: str,
        tables: Tables,
        options: EngineOptions | None,
        source: SourceText,
        import_statements: list[ast.Import | ast.ImportFrom],
    ) -> None:
        super().__init__(path, tables, options)
        self.source = source
        self.edits = Edits(source)
        # every import statement of the file, in source order (all pieces of it)
        self.import_statements = import_statements
        # (line, column) of an import statement -> (module, names) after this pass's rewrites
        self.updated_imports: dict[tuple[int, int], tuple[str | None, list[str]]] = {}
        self._dotted_roots: frozenset[str] | None = None
        self._import_bound: dict[str, str] | None = None
        self._bound_anywhere: dict[str, str] | None = None
        self.unit: Unit | None = None
        self.stack: list[ast.AST] = []  # the nodes being walked, outermost first
        self.stack_scopes: list[Scope] = []  # the scope each of them is read in
        self.import_depth = 0
        self.in_fstring = 0
        self.unchecked_edits = 0  # edits whose syntax only a parse of the output can confirm

    def start_unit(self) -> None:
        self._names.clear()

    def begin(self, scopes: Scopes) -> None:
        """Walk the (piece of the) file whose scopes these are: per-node caches restart."""
        self.scopes = scopes
        self.scope: Scope = scopes.global_scope
        self.unit_scope: Scope = scopes.global_scope
        self._qnames: dict[int, str | None] = {}
        self._names: dict[int, tuple[str, ...]] = {}
        self.docstrings: set[int] = set()  # ids of string nodes that are bare statements
        self.prefixed: set[int] = set()  # ids of arguments that got text inserted before them
        self._tokens: dict[int, StringToken | None] = {}
        self._parts: dict[int, list[StringPart]] = {}
        self._unit_tokens: tuple[tuple[int, int], list[Token]] | None = None
        self.forget_claims()

    # -- where we are ------------------------------------------------------------------------
    def enter(self, node: ast.AST, scope: Scope) -> None:
        self.stack.append(node)
        self.stack_scopes.append(scope)
        self.scope = scope

    def leave(self) -> None:
        self.stack.pop()
        self.stack_scopes.pop()
        self.scope = self.stack_scopes[-1] if self.stack_scopes else self.unit_scope

    def _on_stack(self, node: ast.AST) -> int:
        """Index of ``node`` on the walk stack, or -1."""
        stack = self.stack
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is node:
                return i
        return -1

    def parent(self, node: ast.AST) -> ast.AST | None:
        """The parent of a node of the unit being walked."""
        ancestors = self._ancestors(node)
        if ancestors:
            return ancestors[0]
        return self.unit.ancestors[-1] if self.unit and self.unit.ancestors else None

    def scope_of(self, node: ast.AST) -> Scope:
        index = self._on_stack(node)
        return self.stack_scopes[index] if index >= 0 else self.scope

    def _ancestors(self, node: ast.AST) -> list[ast.AST]:
        """The parents of a node of the unit being walked, nearest first: the walk stack, and
        below it the nodes between the current one and ``node``."""
        index = self._on_stack(node)
        if index >= 0:
            return self.stack[index - 1 :: -1] if index else []
        below = self._path_below(node)
        return [*reversed(below), *reversed(self.stack)]

    def _path_below(self, node: ast.AST) -> list[ast.AST]:
        """The nodes from the current one (excluded) down to ``node``'s parent."""
        if not self.stack:
            return []
        todo: list[tuple[ast.AST, tuple[ast.AST, ...]]] = [(self.stack[-1], ())]
        while todo:
            parent, path = todo.pop()
            for child in ast.iter_child_nodes(parent):
                if child is node:
                    return list(path)
                todo.append((child, (*path, child)))
        return []

    # -- name resolution ---------------------------------------------------------------------
    def qname(self, node: ast.AST) -> str | None:
        """The fully qualified name an expression refers to, resolved through imports (see
        engine/context.py: the same answer, computed without LibCST)."""
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
        if names:
            ordered = sorted(names, key=lambda q: (q[1] != IMPORT, q[0]))
            for name, _ in ordered:
                if name == "torch" or name.startswith("torch."):
                    return name
            return ordered[0][0]
        dotted = full_name(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if dotted and (dotted == "torch" or dotted.startswith("torch.")):
            return dotted
        return None

    def _top(self, node: ast.AST) -> ast.Attribute | None:
        """The outermost attribute above the name at the root of ``node``, not beyond a call:
        it decides how LibCST names that read when a dotted import (``import torch.cuda``)
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
        return bool(root) and root.split(".")[0] in self.tables.foreign_roots

    def _may_be_foreign(self, node: ast.AST) -> bool:
        """Cheap and safe: False only when no qualified name of the root can start with a
        foreign root (it is not one, no import binds it to one, and no enclosing function or
        class is named like one: LibCST names locals ``f.<locals>.x``)."""
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

    # -- positions and text ------------------------------------------------------------------
    @staticmethod
    def lines(node: ast.AST) -> tuple[int, int]:
        return node.lineno, node.end_lineno  # type: ignore[attr-defined]

    def owned(self, node: ast.AST, parent: ast.AST | None = None) -> tuple[int, int]:
        """Byte span of the code LibCST would print for the node (its own parentheses too)."""
        if parent is None:
            parent = self.parent(node)
        assert self.unit is not None
        return self.source.owned_span(node, parent, self.unit.lines)

    def code(self, node: ast.AST, parent: ast.AST | None = None, updated: bool = True) -> str:
        start, end = self.owned(node, parent)
        if updated:
            return self.edits.text(start, end)
        return self.source.data[start:end].decode("utf-8")

    def snippet(self, node: ast.AST, parent: ast.AST | None = None, updated: bool = True) -> str:
        return snippet_of(self.code(node, parent, updated))

    def replace(
        self, start: int, end: int, new: str, expect: str | None = None, checked: bool = False
    ) -> None:
        """Replace bytes [start, end) by ``new``. ``expect``: the text that must be there now.
        An edit that is not a rename with its old text checked nor ``checked`` by construction
        makes the engine parse the migrated file before it is written."""
        if self.in_fstring and self.source.line_of(start) != self.source.line_of(end):
            raise Decline("edit across lines inside an f-string")
        self.edits.replace(
            start, end, new.encode("utf-8"), None if expect is None else expect.encode("utf-8")
        )
        if expect is None and not checked:
            self.unchecked_edits += 1

    def attr_span(self, node: ast.Attribute) -> tuple[int, int]:
        """Byte span of the attribute name of ``a.b`` (the last token of the node)."""
        end = self.source.span(node)[1]
        return end - len(node.attr.encode("utf-8")), end

    def rename_attr(self, node: ast.Attribute, new: str) -> None:
        start, end = self.attr_span(node)
        self.replace(start, end, new, expect=node.attr)

    # -- recording ---------------------------------------------------------------------------
    def record(
        self,
        lines: tuple[int, int],
        rule: str,
        message: str,
        before: str,
        after: str,
        operation: Operation = Operation.MODIFY,
        needs_torch_npu: bool = True,
    ) -> None:
        self.record_lines(*lines, rule, message, before, after, operation, needs_torch_npu)

    def warn(self, lines: tuple[int, int], rule: str, message: str, api: str = "") -> None:
        self.warn_at(lines[0], rule, message, api, Severity.WARNING)

    def unsupported(
        self,
        lines: tuple[int, int],
        api: str,
        entry: Entry,
        message: str | None = None,
        rule: str | None = None,
    ) -> None:
        self.unsupported_at(lines, api, entry, message, rule)

    # -- strings -----------------------------------------------------------------------------
    def body(self, part: StringPart) -> str | None:
        """The raw text between the quotes as it is now (edits applied); None for bytes."""
        token = part.token
        if token.is_bytes:
            return None
        return self.edits.text(token.body_start, token.body_end)

    def token_text(self, part: StringPart) -> str:
        return self.edits.text(part.token.start, part.token.end)

    def unit_tokens(self) -> list[Token]:
        """The tokens of the unit being walked (computed once per unit)."""
        assert self.unit is not None
        lines = self.unit.lines
        if self._unit_tokens is None or self._unit_tokens[0] != lines:
            self._unit_tokens = (lines, self.source.tokens(*lines))
        return self._unit_tokens[1]

    def string_token(self, node: ast.AST) -> StringToken | None:
        """The single token of a string literal node; None for an implicit concatenation."""
        key = id(node)
        if key not in self._tokens:
            self._tokens[key] = self.source.string_token(node)  # type: ignore[arg-type]
        return self._tokens[key]

    def is_single_string(self, node: ast.AST) -> bool:
        """LibCST's SimpleString or FormattedString: one literal token, not a concatenation."""
        if isinstance(node, ast.Constant) and isinstance(node.value, STRING_VALUES):
            return self.string_token(node) is not None
        if isinstance(node, ast.JoinedStr):
            return self.string_token(node) is not None
        return False

    def is_docstring(self, node: ast.AST) -> bool:
        return id(node) in self.docstrings

    def statement_snippet(self, node: ast.stmt, updated: bool = True) -> str:
        """A simple statement as LibCST prints it: with the ``;`` that may follow it."""
        start, end = self.source.span(node)
        data = self.source.data
        i = end
        while i < len(data) and data[i] in b" \t":
            i += 1
        if data[i : i + 1] == b";":
            end = i + 1
            while end < len(data) and data[end] in b" \t":
                end += 1
        text = self.edits.text(start, end) if updated else data[start:end].decode("utf-8")
        return snippet_of(text)

    def alias_lines(self, node: ast.Import | ast.ImportFrom) -> list[tuple[int, int]]:
        """The lines of each name of an import statement."""
        if node.lineno == node.end_lineno:
            return [(node.lineno, node.lineno)] * len(node.names)
        if all(hasattr(a, "lineno") for a in node.names):
            return [(a.lineno, a.end_lineno) for a in node.names]  # type: ignore[attr-defined]
        from ms_fmk_transplt.engine.spans.import_tokens import import_spans

        return [a.lines for a in import_spans(self.source, node).aliases]

    def inserted_before(self, value: ast.AST) -> bool:
        """Whether text was inserted right before ``value`` (torch.device(rank) became
        torch.device("npu", rank))."""
        return id(value) in self.prefixed

    def strings_in(self, node: ast.AST, updated: bool) -> list[str]:
        """The text of every string literal token and f-string text part inside an expression
        (as engine/unsupported.py's ``_strings``: tokens without their outer quotes)."""
        found: list[str] = []

        def visit(sub: ast.AST) -> None:
            if isinstance(sub, ast.JoinedStr) and self.string_token(sub) is not None:
                found.extend(self._fstring_texts(sub.lineno, *self.source.span(sub), updated))
            elif isinstance(sub, ast.JoinedStr) or (
                isinstance(sub, ast.Constant) and isinstance(sub.value, STRING_VALUES)
            ):
                for part in self.string_parts(sub):
                    start, end = part.token.start, part.token.end
                    if part.fstring:
                        found.extend(self._fstring_texts(part.lines[0], start, end, updated))
                    elif updated:
                        found.append(self.token_text(part))
                    else:
                        found.append(self.source.text(start, end))
            else:
                for child in ast.iter_child_nodes(sub):
                    visit(child)

        visit(node)
        return [s.strip("'\"") for s in found]

    def _fstring_texts(self, line: int, start: int, end: int, updated: bool) -> list[str]:
        """Text parts of one f-string token, and the strings inside its expressions."""
        text = self.edits.text(start, end) if updated else self.source.text(start, end)
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as exc:
            raise Decline("f-string does not parse on its own") from exc
        out: list[str] = []
        for sub in ast.walk(tree):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                out.append(sub.value)
        return out

    def string_parts(self, node: ast.Constant | ast.JoinedStr) -> list[StringPart]:
        """The literal tokens of a string node: one, or the parts of ``"a" f"b{c}"``, which
        ``ast`` folds into one node. f-string parts come with ``value`` None."""
        key = id(node)
        cached = self._parts.get(key)
        if cached is not None:
            return cached
        docstring = key in self.docstrings
        token = self.string_token(node)
        if token is not None and isinstance(node, ast.Constant):
            lines = (node.lineno, node.end_lineno)
            parts = [StringPart(token, node, True, docstring, lines, node.value)]  # type: ignore[arg-type]
        else:
            parts = []
            start, end = self.source.span(node)
            for s, e, is_f in literal_tokens(self.unit_tokens(), start, end):
                part_token = self.source.string_token_at(s, e)
                if part_token is None:
                    raise Decline("cannot split a string concatenation")
                value = None
                if not is_f:
                    try:
                        value = ast.literal_eval(self.source.text(s, e))
                    except (ValueError, SyntaxError):
                        value = None
                lines = (self.source.line_of(s), self.source.line_of(e - 1))
                parts.append(StringPart(part_token, node, False, docstring, lines, value, is_f))
        self._parts[key] = parts
        return parts
