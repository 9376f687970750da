"""Per-file state of the span pass: name resolution, the text of nodes, edits and recording.

The concerns of the span pass ask it what a node refers to (``qname``, resolved by
engine/scopes.py), what code it owns (``code``/``snippet``, with or without the edits made so
far), and record their changes as byte-span edits plus the events and notices of the file,
through the recording API of engine/recorder.py (``record`` / ``warn`` / ``unsupported`` at
``lines(node)``), the one the LibCST stages' context (engine/context.py) records through too.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol, TypeVar

from ms_fmk_transplt.engine.options import EngineOptions
from ms_fmk_transplt.engine.recorder import Recorder, RecordMark, snippet_of
from ms_fmk_transplt.engine.scope_model import Scope
from ms_fmk_transplt.engine.scopes import Scopes
from ms_fmk_transplt.engine.spans.decline import Decline
from ms_fmk_transplt.engine.spans.source_text import Edits, SourceText, StringToken, Token
from ms_fmk_transplt.engine.spans.span_names import SpanNames
from ms_fmk_transplt.engine.spans.span_strings import STRING_VALUES, SpanStrings, StringPart
from ms_fmk_transplt.engine.spans.units import Unit
from ms_fmk_transplt.tables import Tables

__all__ = ["STRING_VALUES", "SpanContext", "StringPart"]

_T = TypeVar("_T")


class FrameworkFile(Protocol):
    """What a family found the file to be written for beyond PyTorch (Family.file_facts: the tf
    family's TfFile): the span pass asks only whether it imports torch too."""

    torch: bool


class UnitMark(NamedTuple):
    """The state of a SpanContext before a unit is walked (see ``unit_savepoint``)."""

    records: RecordMark
    unchecked_edits: int
    updated_imports: int  # how many entries: both dicts only grow, a unit adding its own keys
    device_indices: int


class SpanContext(SpanNames, SpanStrings, Recorder):
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
        # -s: each hard-coded device index rewritten -> the line it was first seen on (all pieces)
        self.device_indices: dict[str, int] = {}
        # a TensorFlow file's facts (the tf family's file_facts; None: not a TensorFlow file)
        self.tf: FrameworkFile | None = None
        self._once: dict[tuple[object, ...], Any] = {}  # see ``once``

    def once(self, scan: Callable[..., _T], *args: object) -> _T:
        """``scan(*args)``, computed once per file: a concern's scan of the whole file, asked
        again by the concerns of each piece of a large file (safety/chunks.py). Only for a
        result that is read, never changed; ``args`` live as long as the file's pass."""
        key = (scan, *map(id, args))
        if key not in self._once:
            self._once[key] = scan(*args)
        result: _T = self._once[key]
        return result

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

    def unit_savepoint(self) -> UnitMark:
        """Before a unit is walked: ``unit_rollback`` then undoes all it did."""
        self.edits.savepoint()
        return UnitMark(
            self.savepoint(),
            self.unchecked_edits,
            len(self.updated_imports),
            len(self.device_indices),
        )

    def unit_rollback(self, mark: UnitMark) -> None:
        """The unit being walked is left as written: its edits, records and claims undone, the
        walk's position reset."""
        self.edits.rollback()
        self.rollback(mark.records)
        self.unchecked_edits = mark.unchecked_edits
        _truncate(self.updated_imports, mark.updated_imports)
        _truncate(self.device_indices, mark.device_indices)
        self.stack.clear()
        self.stack_scopes.clear()
        self.scope = self.unit_scope
        self.import_depth = self.in_fstring = 0

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

    # -- positions and text ------------------------------------------------------------------
    @staticmethod
    def lines(node: ast.AST) -> tuple[int, int]:
        return node.lineno, node.end_lineno  # type: ignore[attr-defined]

    def owned(self, node: ast.AST, parent: ast.AST | None = None) -> tuple[int, int]:
        """Byte span of the code the node owns: its text with the parentheses that wrap it
        alone (SourceText.owned_span)."""
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


def _truncate(entries: dict[Any, Any], size: int) -> None:
    """Remove the entries added after the first ``size`` (a dict keeps the order of insertion)."""
    for key in list(entries)[size:]:
        del entries[key]
