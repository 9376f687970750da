"""Where the names of an import statement are in the bytes (``ast`` gives aliases no position
before Python 3.10, and never the module of a ``from`` import)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ms_fmk_transplt.engine.spans.decline import Decline
from ms_fmk_transplt.engine.spans.source_text import SourceText

Span = tuple[int, int]


@dataclass(frozen=True)
class AliasSpans:
    name: Span  # the dotted name as written
    asname: Span | None
    lines: tuple[int, int]


@dataclass(frozen=True)
class ImportSpans:
    module: Span | None  # the dotted module of a from-import (after any dots)
    aliases: tuple[AliasSpans, ...]  # empty for `import *`


def import_spans(source: SourceText, node: ast.Import | ast.ImportFrom) -> ImportSpans:
    start, end = source.span(node)
    tokens = [
        t for t in source.tokens(node.lineno, node.end_lineno or node.lineno) if start <= t[1] < end
    ]
    words = [t[0] for t in tokens]
    i = 1
    module: Span | None = None
    if isinstance(node, ast.ImportFrom):
        while words[i] in (".", "..."):
            i += 1
        if words[i] != "import":
            j = i
            while words[j] != "import":
                j += 1
            module = (tokens[i][1], tokens[j - 1][2])
            i = j
        i += 1  # "import"
        if words[i] == "(":
            i += 1
        if words[i] == "*":
            return ImportSpans(module, ())
    aliases = []
    while i < len(tokens) and words[i] != ")":
        first = i
        i += 1
        while i < len(tokens) and words[i] == ".":
            i += 2
        name = (tokens[first][1], tokens[i - 1][2])
        asname = None
        if i < len(tokens) and words[i] == "as":
            asname = (tokens[i + 1][1], tokens[i + 1][2])
            i += 2
        aliases.append(
            AliasSpans(name, asname, (source.line_of(name[0]), source.line_of((asname or name)[1])))
        )
        if i < len(tokens) and words[i] == ",":
            i += 1
    if len(aliases) != len(node.names):
        raise Decline("cannot read the names of an import statement")
    return ImportSpans(module, tuple(aliases))
