"""String literals for the span pass, by token: one SimpleString per literal token
(an implicit concatenation ``"a" "b"`` is several; ``ast`` folds it into one constant), their
bodies as they read after the edits made so far, and the text of every string inside an
expression. Part of SpanContext (engine/spans/span_context.py), which holds the state used here:
``source``, ``edits``, ``unit`` and the per-piece caches."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ms_fmk_transplt.engine.recorder import snippet_of
from ms_fmk_transplt.engine.spans.decline import Decline
from ms_fmk_transplt.engine.spans.source_text import (
    Edits,
    SourceText,
    StringToken,
    Token,
    literal_tokens,
)
from ms_fmk_transplt.engine.spans.units import Unit

STRING_VALUES = (str, bytes)


@dataclass(eq=False)
class StringPart:
    """One string literal token (a SimpleString to the concerns): a whole ``ast.Constant``, or
    one part of an implicit concatenation (``"a" "b"``), which ``ast`` folds into one constant."""

    token: StringToken
    node: ast.Constant | ast.JoinedStr  # the ast node the token belongs to
    whole: bool  # the token is the whole node (claims on the node apply to it)
    docstring: bool = False
    lines: tuple[int, int] = (0, 0)
    value: object = field(default=None)  # the literal's value, as Python evaluates it
    fstring: bool = False  # an f-string part of a concatenation

    @property
    def key(self) -> object:
        return self.node if self.whole else self


class SpanStrings:
    """Mixed into SpanContext: string literal tokens."""

    source: SourceText
    edits: Edits
    unit: Unit | None
    docstrings: set[int]
    prefixed: set[int]
    _tokens: dict[int, StringToken | None]
    _parts: dict[int, list[StringPart]]
    _unit_tokens: tuple[tuple[int, int], list[Token]] | None

    def owned(self, node: ast.AST, parent: ast.AST | None = None) -> tuple[int, int]:
        raise NotImplementedError  # pragma: no cover - SpanContext's

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

    def string_token(self, node: ast.Constant | ast.JoinedStr) -> StringToken | None:
        """The single token of a string literal node; None for an implicit concatenation."""
        key = id(node)
        if key not in self._tokens:
            self._tokens[key] = self.source.string_token(node)
        return self._tokens[key]

    def is_single_string(self, node: ast.AST) -> bool:
        """A SimpleString or FormattedString: one literal token, not a concatenation."""
        if isinstance(node, ast.Constant) and isinstance(node.value, STRING_VALUES):
            return self.string_token(node) is not None
        if isinstance(node, ast.JoinedStr):
            return self.string_token(node) is not None
        return False

    def is_docstring(self, node: ast.AST) -> bool:
        return id(node) in self.docstrings

    def statement_snippet(self, node: ast.stmt, updated: bool = True) -> str:
        """A simple statement's text with the ``;`` that may follow it."""
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
            return [(a.lineno, a.end_lineno or a.lineno) for a in node.names]
        from ms_fmk_transplt.engine.spans.import_tokens import import_spans

        return [a.lines for a in import_spans(self.source, node).aliases]

    def inserted_before(self, value: ast.AST) -> bool:
        """Whether text was inserted right before ``value`` (torch.device(rank) became
        torch.device("npu", rank))."""
        return id(value) in self.prefixed

    def strings_in(self, node: ast.AST, updated: bool) -> list[str]:
        """The text of every string literal token and f-string text part inside an expression
        (tokens without their outer quotes)."""
        found: list[str] = []
        self._strings(node, updated, found)
        return [s.strip("'\"") for s in found]

    def _strings(self, sub: ast.AST, updated: bool, found: list[str]) -> None:
        # (a method, not a recursive closure: that would be a reference cycle holding the
        # context, and the file's trees with it, until the cyclic garbage collector ran)
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
                self._strings(child, updated, found)

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
            lines = (node.lineno, node.end_lineno or node.lineno)
            parts = [StringPart(token, node, True, docstring, lines, node.value)]
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
