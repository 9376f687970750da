"""How a name taken from the input (a path, a link's target) is shown to people: on one line,
with nothing a terminal, an editor or a spreadsheet would interpret. Control characters (newline,
CR, ESC...), format characters (the bidi controls of "trojan source", zero-width characters) and
line separators are escaped (``\\n``, ``\\x1b``, ``\\u202e``), and bytes that are not UTF-8 (a
name the file system hands back undecoded) are shown as ``\\xNN``. Every report, the log, the
terminal and ``--check`` show names through ``shown``; files are still read and written under
their real names."""

from __future__ import annotations

import os
import unicodedata

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def shown(name: object) -> str:
    """``name`` (text, bytes or a path) as printable text on one line."""
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    text = name.decode("utf-8", "surrogateescape") if isinstance(name, bytes) else str(name)
    if text.isprintable():  # the usual case: nothing to escape
        return text
    return "".join(_escaped(char) for char in text)


def _escaped(char: str) -> str:
    if char == " " or unicodedata.category(char) not in _ESCAPED_CATEGORIES:
        return char
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte (os.fsdecode's surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
