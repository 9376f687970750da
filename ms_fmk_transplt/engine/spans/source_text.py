"""The bytes of one file as the span pass sees them: positions of ``ast`` nodes as byte offsets,
the text a node owns (with the parentheses that wrap it alone), string tokens, and the
edits made so far.

Everything here works on UTF-8 source whose lines end with ``\\n`` or ``\\r\\n`` (``ast``'s
column offsets are then byte offsets into each line); spans/source_encoding.py gives it
those bytes for the others.
"""

from __future__ import annotations

import ast
import bisect
import io
import re
import tokenize

from ms_fmk_transplt.engine.spans.decline import Decline

_PREFIX = re.compile(r"[rRbBuUfF]{0,2}")
Token = tuple[str, int, int, int]  # text, start offset, end offset, tokenize type
FSTRING_START = getattr(tokenize, "FSTRING_START", -1)
FSTRING_END = getattr(tokenize, "FSTRING_END", -1)
# ast nodes whose own syntax puts "(" right before their first child and ")" after their last
_PAREN_PARENTS = (ast.Call, ast.ClassDef, ast.GeneratorExp)
_SIGNIFICANT = frozenset(
    getattr(tokenize, name, tokenize.OP)
    for name in ("OP", "NAME", "NUMBER", "STRING", "FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
)


class SourceText:
    """Offsets, slices and tokens of one file's bytes."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._starts: list[int] | None = None
        match = re.search(rb"\r\n|\n", data)
        self.newline = match.group(0).decode() if match else "\n"

    @property
    def starts(self) -> list[int]:
        """Byte offset of the start of each line (index 0 is line 1)."""
        if self._starts is None:
            self._starts = [0, *(m.end() for m in re.finditer(b"\n", self.data))]
        return self._starts

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def span(self, node: ast.AST) -> tuple[int, int]:
        # (any node with a position: expr, stmt, arg, keyword, ...; ast.AST declares none)
        return (
            self.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.offset(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )

    def line_end(self, line: int) -> int:
        """Offset just past the newline that ends ``line`` (or the end of the file)."""
        starts = self.starts
        return starts[line] if line < len(starts) else len(self.data)

    # -- what a node owns ---------------------------------------------------------------------
    def owned_span(
        self,
        node: ast.AST,
        parent: ast.AST | None,
        lines: tuple[int, int],
        tokens: list[Token] | None = None,
    ) -> tuple[int, int]:
        """The node's span widened by the parentheses that wrap it alone: the rules treat those
        as part of the node (``(x.cuda())`` is one Call with its parentheses, as in LibCST's
        tree), ``ast`` leaves them out.
        ``lines`` are the lines of the statement the node is in."""
        start, end = self.span(node)
        if self._char_before(start) not in (b"(", b"\n", b"\\", b"") or self._char_after(
            end
        ) not in (b")", b"\n", b"\r", b"#", b"\\", b""):
            return start, end
        if isinstance(parent, (ast.With, ast.AsyncWith, ast.withitem)):
            raise Decline("parentheses around a with item")
        tokens = self.tokens(*lines) if tokens is None else tokens
        k = _adjacent(tokens, start, before=True)
        m = _adjacent(tokens, end, before=False)
        if parent is not None and _in_parent_parens(self, parent):
            first_child, last_child = _edge_children(parent)
            k -= first_child is node
            m -= last_child is node
        pairs = min(k, m)
        if pairs <= 0:
            return start, end
        left = [t for t in tokens if t[0] == "(" and t[2] <= start]
        right = [t for t in tokens if t[0] == ")" and t[1] >= end]
        return left[-pairs][1], right[pairs - 1][2]

    def _char_before(self, offset: int) -> bytes:
        data, i = self.data, offset - 1
        while i >= 0 and data[i] in b" \t":
            i -= 1
        return data[i : i + 1]

    def _char_after(self, offset: int) -> bytes:
        data, i = self.data, offset
        while i < len(data) and data[i] in b" \t":
            i += 1
        return data[i : i + 1]

    def tokens(self, first: int, last: int) -> list[Token]:
        """(text, start, end offsets, type) of the tokens of lines first..last (comments and
        line breaks left out), read as the inside of a bracket so that line breaks do not
        matter."""
        base = self.starts[first - 1]
        text = self.data[base : self.line_end(last)].decode("utf-8")
        lines = [line + "\n" for line in text.split("\n")]
        lines[-1] = lines[-1][:-1]
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line.encode("utf-8")))

        def at(row: int, col: int) -> int:
            if row == 1:
                col -= 1  # the "(" put in front
            if row - 1 >= len(lines):
                return base + offsets[-1]
            return base + offsets[row - 1] + len(lines[row - 1][:col].encode("utf-8"))

        kinds = _SIGNIFICANT
        out: list[Token] = []
        try:
            for tok in tokenize.generate_tokens(io.StringIO("(" + text + "\n)").readline):
                if tok.type in kinds:
                    out.append((tok.string, at(*tok.start), at(*tok.end), tok.type))
        except (tokenize.TokenError, SyntaxError) as exc:
            raise Decline(f"cannot tokenize lines {first}-{last} ({exc})") from exc
        return out[1:-1]

    # -- strings ------------------------------------------------------------------------------
    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8")

    def string_token(self, node: ast.Constant | ast.JoinedStr) -> StringToken | None:
        """The literal as one token, or None when the node is an implicit concatenation."""
        return self.string_token_at(*self.span(node))

    def string_token_at(self, start: int, end: int) -> StringToken | None:
        """The string token spanning [start, end), or None if that is not one token."""
        raw = self.data[start:end].decode("utf-8")
        prefix = _prefix(raw)
        rest = raw[len(prefix) :]
        quote = rest[:3] if rest[:3] in ('"""', "'''") else rest[:1]
        if quote not in ('"', "'", '"""', "'''") or not rest.endswith(quote):
            return None
        if len(rest) < 2 * len(quote):
            return None
        body = rest[len(quote) : len(rest) - len(quote)]
        if _has_unescaped(body, quote):
            return None
        return StringToken(start, end, prefix, quote, body)


class StringToken:
    """One string literal token: ``prefix quote body quote``."""

    __slots__ = ("start", "end", "prefix", "quote", "body")

    def __init__(self, start: int, end: int, prefix: str, quote: str, body: str) -> None:
        self.start, self.end = start, end
        self.prefix, self.quote, self.body = prefix, quote, body

    @property
    def body_start(self) -> int:
        return self.start + len(self.prefix) + len(self.quote)

    @property
    def body_end(self) -> int:
        return self.end - len(self.quote)

    @property
    def is_bytes(self) -> bool:
        return "b" in self.prefix.lower()


def _prefix(text: str) -> str:
    """The string prefix (``rb``, ``f``, ...) a token starts with, possibly empty."""
    match = _PREFIX.match(text)
    assert match is not None  # {0,2}: it matches every text
    return match.group(0)


def _has_unescaped(body: str, quote: str) -> bool:
    if quote not in body:
        return False
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch == "\\":
            i += 2
            continue
        if body.startswith(quote, i):
            return True
        i += 1
    return False


def _adjacent(tokens: list[Token], at: int, before: bool) -> int:
    """How many "(" end right before ``at`` (or ")" start right after it), in a row."""
    count = 0
    if before:
        index = max((i for i, t in enumerate(tokens) if t[2] <= at), default=-1)
        while index >= 0 and tokens[index][0] == "(":
            count += 1
            index -= 1
    else:
        index = min((i for i, t in enumerate(tokens) if t[1] >= at), default=len(tokens))
        while index < len(tokens) and tokens[index][0] == ")":
            count += 1
            index += 1
    return count


def _in_parent_parens(source: SourceText, parent: ast.AST | None) -> bool:
    if isinstance(parent, _PAREN_PARENTS):
        return True
    if isinstance(parent, ast.Tuple):
        start = source.span(parent)[0]
        return source.data[start : start + 1] == b"("
    return False


def _edge_children(parent: ast.AST) -> tuple[ast.AST | None, ast.AST | None]:
    """The first and last child inside the parent's own parentheses (None: a comma follows)."""
    items: list[ast.expr | ast.keyword]
    if isinstance(parent, ast.Call):
        items = sorted([*parent.args, *parent.keywords], key=_position)
    elif isinstance(parent, ast.ClassDef):
        items = sorted([*parent.bases, *parent.keywords], key=_position)
    elif isinstance(parent, ast.GeneratorExp):
        return parent.elt, None
    else:
        assert isinstance(parent, ast.Tuple)  # the other parent _in_parent_parens accepts
        items = list(parent.elts)
    if not items:
        return None, None
    first: ast.AST | None = items[0]
    last: ast.AST | None = items[-1]
    if isinstance(first, (ast.Starred, ast.keyword)):
        first = None
    if isinstance(last, (ast.Starred, ast.keyword)) or (
        isinstance(parent, ast.Tuple) and len(items) == 1
    ):
        last = None
    return first, last


def _position(node: ast.expr | ast.keyword) -> tuple[int, int]:
    return node.lineno, node.col_offset


class Edits:
    """The replacements made to one file, kept sorted; never overlapping."""

    def __init__(self, source: SourceText) -> None:
        self.source = source
        self.starts: list[int] = []
        self.items: list[tuple[int, int, bytes]] = []
        self._made: list[tuple[int, int, bytes]] = []  # since the last savepoint

    def savepoint(self) -> None:
        """``rollback`` undoes the edits made from now on (one savepoint at a time)."""
        self._made.clear()

    def rollback(self) -> None:
        """Undo the edits made since the savepoint."""
        for item in reversed(self._made):
            index = bisect.bisect_left(self.starts, item[0])
            while self.items[index] is not item:
                index += 1
            del self.starts[index]
            del self.items[index]
        self._made.clear()

    def __bool__(self) -> bool:
        return bool(self.items)

    def rewrites_from(self, offset: int) -> bool:
        """An edit replaces bytes starting at ``offset`` (not only inserts text there)."""
        index = bisect.bisect_left(self.starts, offset)
        while index < len(self.items) and self.items[index][0] == offset:
            if self.items[index][1] > offset:
                return True
            index += 1
        return False

    def replace(self, start: int, end: int, new: bytes, expect: bytes | None = None) -> None:
        """Replace bytes [start, end) by ``new``; ``expect`` is what must be there now."""
        if expect is not None and self.source.data[start:end] != expect:
            raise Decline(f"unexpected text at byte {start}")
        index = bisect.bisect_right(self.starts, start)
        if index and self.items[index - 1][1] > start:
            raise Decline("overlapping edits")
        if index < len(self.items) and self.items[index][0] < end:
            raise Decline("overlapping edits")
        item = (start, end, new)
        self.starts.insert(index, start)
        self.items.insert(index, item)
        self._made.append(item)

    def render(self, start: int, end: int) -> bytes:
        """Bytes [start, end) with the edits that lie inside applied."""
        data = self.source.data
        lo = bisect.bisect_left(self.starts, start)
        if lo == len(self.items) or self.items[lo][0] > end:
            return data[start:end]
        out = []
        pos = start
        for i in range(lo, len(self.items)):
            s, e, new = self.items[i]
            if s > end or e > end:
                break
            out.append(data[pos:s])
            out.append(new)
            pos = e
        out.append(data[pos:end])
        return b"".join(out)

    def text(self, start: int, end: int) -> str:
        return self.render(start, end).decode("utf-8")

    def apply(self) -> bytes:
        return self.render(0, len(self.source.data))


def literal_tokens(tokens: list[Token], start: int, end: int) -> list[tuple[int, int, bool]]:
    """The string literal tokens that make up [start, end): (start, end, is an f-string).
    Python 3.12 splits an f-string into FSTRING_START ... FSTRING_END; they are joined here."""
    out: list[tuple[int, int, bool]] = []
    depth = 0
    begin = 0
    for text, s, e, kind in tokens:
        if s < start or e > end:
            continue
        if kind == FSTRING_START:
            if depth == 0:
                begin = s
            depth += 1
        elif kind == FSTRING_END:
            depth -= 1
            if depth == 0:
                out.append((begin, e, True))
        elif depth == 0:
            if kind != tokenize.STRING:
                raise Decline(f"unexpected token {text!r} in a string concatenation")
            prefix = _prefix(text)
            out.append((s, e, "f" in prefix.lower()))
    return out
