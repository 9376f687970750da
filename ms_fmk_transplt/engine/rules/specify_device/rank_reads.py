"""Where a file first reads a rank (for -s's rank_risk warning): the first identifier named like
a rank (``local_rank``, ``args.rank``, a parameter, a keyword argument) or the first plain string
literal naming a rank variable (``"LOCAL_RANK"``), anywhere in the file (the line the earlier
LibCST implementation reported). The span pass walks only anchored statements, so this reads the
tokens of the top-level statements that hold such a word (comments and other string text do not
count)."""

from __future__ import annotations

import ast
import bisect
import re
import tokenize
from collections.abc import Collection

from ms_fmk_transplt.engine.spans.decline import Decline
from ms_fmk_transplt.engine.spans.module_facts import Line
from ms_fmk_transplt.engine.spans.source_text import SourceText, Token

_WORD = rb"(?<![A-Za-z0-9_])(?:%s)(?![A-Za-z0-9_])"


def first_rank_line(
    source: SourceText, lines: list[Line], names: Collection[str], env: Collection[str]
) -> int:
    """The first line holding a rank name or a rank variable literal; 0 if there is none."""
    words = sorted({*names, *env}, key=lambda w: (-len(w), w))
    if not words or not lines:
        return 0
    pattern = re.compile(_WORD % b"|".join(re.escape(w.encode()) for w in words))
    lasts = [line.last for line in lines]
    segment = -1
    tokens: list[Token] = []
    starts: list[int] = []
    for match in pattern.finditer(source.data):
        at = match.start()
        index = bisect.bisect_left(lasts, source.line_of(at))
        if index == len(lines):
            return 0  # after the last statement: comments only
        if index != segment:  # the statement holding it, with the comments and decorators above
            segment = index
            first = lines[index - 1].last + 1 if index else 1
            try:
                tokens = source.tokens(first, lines[index].last)
            except Decline:  # (not seen in practice) a statement read as having no rank
                tokens = []
            starts = [t[1] for t in tokens]
        line = _rank_at(source, tokens, bisect.bisect_right(starts, at) - 1, at, names, env)
        if line:
            return line
    return 0


def _rank_at(
    source: SourceText,
    tokens: list[Token],
    index: int,
    at: int,
    names: Collection[str],
    env: Collection[str],
) -> int:
    """The line of the rank name or literal at byte ``at`` (in ``tokens[index]`` if any); 0 if
    that word is not one."""
    if index < 0 or tokens[index][2] <= at:
        return 0  # in a comment, or between tokens
    text, start, end, kind = tokens[index]
    if kind == tokenize.NAME:
        return source.line_of(start) if start == at and text in names else 0
    if kind != tokenize.STRING:
        return 0  # (an f-string's text part on Python 3.12+)
    token = source.string_token_at(start, end)
    if token is None or token.is_bytes:
        return 0
    if "f" in token.prefix.lower():  # an f-string in one token (Python < 3.12)
        return _in_fstring(source.line_of(start), text, names, env)
    return source.line_of(start) if token.body in env else 0


def _in_fstring(line: int, text: str, names: Collection[str], env: Collection[str]) -> int:
    """The first line of a rank name or literal inside the expressions of one f-string."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return 0
    texts = {
        id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values
    }  # the f-string's own text parts are not string literals
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            hit = node.id in names
        elif isinstance(node, ast.Attribute):
            hit = node.attr in names
        elif isinstance(node, (ast.keyword, ast.arg)):
            hit = getattr(node, "arg", None) in names
        elif isinstance(node, ast.Constant) and id(node) not in texts:
            hit = isinstance(node.value, str) and node.value in env
        else:
            continue
        if hit:
            found.append(line + getattr(node, "lineno", 1) - 1)
    return min(found, default=0)
