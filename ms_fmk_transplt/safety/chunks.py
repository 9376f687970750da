"""Large files in pieces: the stdlib parser needs about 150 times a file's size in memory for
its tree (1.2 GB for an 8 MB generated module), so a file larger than ``CHUNK_BYTES`` is parsed
as consecutive runs of whole top-level statements, each parsed on its own and released before
the next.

A cut is tried at a line that starts in column 0 with code (not a comment, not a closing
bracket, not ``else``/``elif``/``except``/``finally``, which continue a statement). Python's
grammar makes any cut inside a statement leave the first part unparseable (an open bracket or
string, a backslash, a header without its body, a decorator without its definition), so a cut
is kept when the part before it parses. Each part is parsed with as many newlines in front as
lines precede it: its line numbers are those of the file.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterator

from ms_fmk_transplt.safety.parse_bounds import PARSE_CHECK_BYTES, check_parse_size

CHUNK_BYTES = 2**20
# The span pass keeps the trees of a large file's first pieces, up to this much of its source,
# from its first reading of the file (the module facts) for its walk, and parses the others
# again one at a time: a tree holds about 70 times its source's size (some 280 MB here, less
# than what a 10 MB file's facts, events, edits and output take by the end of its pass: the
# peak memory stays that of the end; 6 MB saved 2% more time for 90 MB more at the peak).
KEEP_BYTES = 4 * CHUNK_BYTES
_CUT = re.compile(rb"^(?![ \t\f\r\n#)\]}]|else\b|elif\b|except\b|finally\b)", re.M)

Piece = tuple[int, int, int]  # (first line, start offset, end offset)


def parse_piece(data: bytes, piece: Piece) -> ast.Module:
    """The tree of one piece; raises TooDeep for a piece (one huge statement) whose tree would
    exceed the memory of one parse (parse_bounds.check_parse_size)."""
    first, start, end = piece
    if end - start > PARSE_CHECK_BYTES:
        check_parse_size(data[start:end], first)
    with warnings.catch_warnings():  # e.g. invalid escapes: the user's code, not our business
        warnings.simplefilter("ignore")
        return ast.parse(b"\n" * (first - 1) + data[start:end])


def pieces(data: bytes, size: int | None = None) -> Iterator[tuple[Piece, ast.Module]]:
    """Consecutive parts of the file, each with its tree; raises SyntaxError where the file
    does not parse. A file no larger than ``size`` (default CHUNK_BYTES) is one part."""
    size = CHUNK_BYTES if size is None else size
    start, line = 0, 1
    while start < len(data):
        piece, tree = _next_piece(data, start, line, size)
        yield piece, tree
        line += data.count(b"\n", start, piece[2])
        start = piece[2]


def _next_piece(data: bytes, start: int, line: int, size: int) -> tuple[Piece, ast.Module]:
    if len(data) - start <= size:
        piece = (line, start, len(data))
        return piece, parse_piece(data, piece)
    for match in _CUT.finditer(data, start + size):
        cut = match.start()
        piece = (line, start, cut)
        try:
            return piece, parse_piece(data, piece)
        except SyntaxError:
            continue  # inside a statement: try the next place
    piece = (line, start, len(data))
    return piece, parse_piece(data, piece)
