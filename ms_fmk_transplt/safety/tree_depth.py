"""How deep a file's syntax tree is, measured without recursion (rule parse.limit).

Long expressions nest without a single bracket: ``x + 1 + 1 + ...`` (each ``+`` one level),
``a.b().c().d()...``, ``- - - x``, ``lambda: lambda: ...``, ``a if b else c if d else ...``, an
``elif`` chain. The tool's own code walks trees recursively, LibCST's visitors spend about six
Python frames per level and LibCST's native parser overflows its stack (a segfault) on a few
thousand levels, taking a quadratic time to get there. A file whose stdlib tree is deeper than
``MAX_DEPTH`` is therefore copied unchanged with a ``parse.limit`` row, before LibCST ever sees
it; the stdlib parser's own RecursionError/MemoryError on such a file means the same.

The measure is cheap: an expression's subtree is at most about as deep as its source text is
long, so only expressions longer than the depth still allowed are walked; everything else is a
walk over statements.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import accumulate

from ms_fmk_transplt.safety.parse_bounds import TooDeep as TooDeep  # (where it was defined)

MAX_DEPTH = 300
# Python frames the engine may need per level of the tree: LibCST's visitors spend about six,
# twice when a concern starts a second walk of the module from deep inside the first
_FRAMES_PER_LEVEL = 16
_FREE_FRAMES = 500
# levels a node's text may not pay for with a byte (an expression statement, a leaf's context)
_SLACK = 4


def too_deep_message(line: int | None, why: str = "") -> str:
    where = f"line {line}: " if line else ""
    return (
        f"{where}code nested more than {MAX_DEPTH} levels deep (a very long expression, "
        f"or chain of calls, operators or elifs{why}); copied unchanged"
    )


def check_tree(tree: ast.AST, data: bytes) -> None:
    """Raises TooDeep when ``tree`` (parsed from ``data``, with the file's line numbers) is
    deeper than MAX_DEPTH."""
    found = _deepest(tree, data)
    if found is not None:
        raise TooDeep(too_deep_message(found), found)


def parse_failure(exc: BaseException) -> TooDeep:
    """The stdlib parser's RecursionError or MemoryError on a file, as a skip."""
    why = f": the stdlib parser raised {type(exc).__name__}"
    return TooDeep(too_deep_message(None, why))


def check_source(source: bytes) -> None:
    """The depth guard for a file a LibCST stage is about to parse, or the stdlib parser has
    refused (raises TooDeep). Where the stdlib parser refuses the file (syntax newer than this
    Python, or a syntax error), the bound is the longest statement in tokens."""
    from ms_fmk_transplt.safety.chunks import pieces  # (imports this module's users)

    try:
        for _, tree in pieces(source):
            check_tree(tree, source)
    except (RecursionError, MemoryError) as exc:
        raise parse_failure(exc) from exc
    except (SyntaxError, ValueError):
        _check_tokens(source)


def _deepest(tree: ast.AST, data: bytes) -> int | None:
    """The line of the first node found deeper than MAX_DEPTH, or None."""
    if len(data) + _SLACK <= MAX_DEPTH:
        return None
    starts: list[int] = []
    # (node, its depth, whether its text bounds the depth below it: not inside an f-string,
    # whose inner positions are unreliable before Python 3.12)
    stack: list[tuple[ast.AST, int, bool]] = [(tree, 1, True)]
    positioned, joined, node_type = (ast.stmt, ast.expr), ast.JoinedStr, ast.AST
    while stack:
        node, depth, spans = stack.pop()
        if depth > MAX_DEPTH:
            return int(getattr(node, "lineno", 1))
        if spans and isinstance(node, positioned):
            if isinstance(node, joined):
                spans = False
            elif node.lineno == node.end_lineno and not getattr(node, "decorator_list", None):
                if depth + (node.end_col_offset or 0) - node.col_offset + _SLACK <= MAX_DEPTH:
                    continue  # each level below costs at least one byte of its text
            elif depth + _length(node, data, starts) + _SLACK <= MAX_DEPTH:
                continue
        depth += 1
        for name in node._fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, node_type):
                        stack.append((item, depth, spans))
            elif isinstance(value, node_type):
                stack.append((value, depth, spans))
    return None


def _length(node: ast.stmt | ast.expr, data: bytes, starts: list[int]) -> int:
    """Bytes of the node's text, decorators included (``ast`` columns are UTF-8 byte
    offsets)."""
    first, col = node.lineno, node.col_offset
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        first, col = min(first, decorators[0].lineno), 0
    last = node.end_lineno or first
    end_col = node.end_col_offset if node.end_col_offset is not None else len(data)
    if first == last:
        return end_col - col
    if not starts:
        starts.append(0)  # line starts, at C speed: each line's length plus its newline
        starts.extend(accumulate(map((1).__add__, map(len, data.split(b"\n")))))
    if last > len(starts):
        return len(data)  # (positions beyond the text: never prune)
    return starts[last - 1] + end_col - starts[first - 1] - col


def _check_tokens(source: bytes) -> None:
    """Tokens per statement (plus indentation and elif chains) bound a tree's depth."""
    count = indent = elifs = 0
    line = 1
    try:
        for tok in tokenize.tokenize(io.BytesIO(source).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                count = 0
                continue
            if tok.type == tokenize.INDENT:
                indent += 1
            elif tok.type == tokenize.DEDENT:
                indent -= 1
            elif tok.type == tokenize.NAME and tok.string in ("elif", "if", "else"):
                elifs = elifs + 1 if tok.string == "elif" else 0
            count += 1
            line = tok.start[0]
            if count + 2 * indent + elifs > MAX_DEPTH:
                raise TooDeep(
                    f"line {line}: a statement too long to check for nesting (over {MAX_DEPTH} "
                    "tokens) in a file the stdlib parser cannot read; copied unchanged",
                    line,
                )
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError, LookupError):
        return  # not a depth problem: the caller reports the parse error (parse.*)


@contextmanager
def recursion_room() -> Iterator[None]:
    """Enough Python frames for the engine's recursive code on a tree of MAX_DEPTH levels,
    wherever the file is migrated from (the recursion limit counts frames from the bottom)."""
    old = sys.getrecursionlimit()
    needed = _stack_depth() + MAX_DEPTH * _FRAMES_PER_LEVEL + _FREE_FRAMES
    if needed <= old:
        yield
        return
    sys.setrecursionlimit(needed)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _stack_depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1  # type: ignore[assignment]
    return depth
