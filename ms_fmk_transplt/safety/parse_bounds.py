"""The bounds of one parse: ``TooDeep``, the exception of a file beyond a guard of the engine
(its ``parse.limit`` row says why), and the size guard of a text about to be parsed at once.

The stdlib parser needs up to about 1 KB per token for its tree (a one-statement list of a
million ``1,`` items: 0.98 GB; 15 million, a 30 MB file: 14.6 GB), while files are parsed in
pieces of whole top-level statements of about 1 MiB (spans/chunks.py). A text parsed at once that
is larger than PARSE_CHECK_BYTES (one huge statement, or a whole file read by a whole-file
analysis) is parsed only if it holds at most MAX_PARSE_TOKENS tokens, estimated from its bytes:
every delimiter, operator, dot, quote and newline byte, the word operators, and statement ends
once more (an upper bound for code; a large string literal full of commas counts its commas).
"""

from __future__ import annotations


class TooDeep(Exception):
    """A file beyond the depth guard (or the size guard of one parse, ``check_parse_size``):
    ``str(exc)`` says why, for its parse.limit row."""

    def __init__(self, reason: str, line: int = 1) -> None:
        super().__init__(reason)
        self.line = line


PARSE_CHECK_BYTES = 2**20  # (the size of a piece: spans/chunks.py)
MAX_PARSE_TOKENS = 2**20
_TOKEN_BYTES = b",;:()[]{}=<>+-*/%&|^~@.\n'\""
_OTHER_BYTES = bytes(b for b in range(256) if b not in _TOKEN_BYTES)
# counted once more: a statement is two nodes or more (``a;`` an expression and a name)
_WORDS = (b" and ", b" or ", b" in ", b" is ", b" if ", b" not ", b";", b"\n")


def check_parse_size(text: bytes, line: int = 1) -> None:
    """Raises TooDeep (a parse.limit row) for a text whose syntax tree would need more memory
    than one parse may take (see MAX_PARSE_TOKENS); costs nothing below PARSE_CHECK_BYTES."""
    if len(text) <= PARSE_CHECK_BYTES:
        return
    tokens = len(text.translate(None, _OTHER_BYTES)) + sum(map(text.count, _WORDS))
    if tokens > MAX_PARSE_TOKENS:
        raise TooDeep(
            f"line {line}: a statement too large to parse within the memory bound (about "
            f"{tokens:,} tokens in {len(text) / 2**20:.1f} MiB parsed at once, more than "
            f"{MAX_PARSE_TOKENS:,}: its syntax tree would need more than 1 GiB); copied unchanged",
            line,
        )
