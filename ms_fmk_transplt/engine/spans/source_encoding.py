"""Files that are not plain UTF-8 with ``\\n`` / ``\\r\\n`` line ends, read as Python reads them.

Python decodes a source file by its byte order mark or PEP 263 coding cookie (UTF-8 otherwise)
and takes a bare CR as a line break. The span pass works on UTF-8 bytes whose lines end with
``\\n`` or ``\\r\\n``: ``decode`` gives it those bytes (the cookie disarmed, each bare CR read as
``\\n``: neither changes a byte offset) and ``Decoded.apply`` writes its edits back into the
file's own bytes, in the file's encoding, with its own line breaks (a line the pass inserts
ends as the file's first line does). A stateful encoding (ISO-2022-JP, UTF-7, HZ: a character's
bytes depend on those before it) has no such offset map: its text is re-encoded whole (the bytes
the earlier LibCST implementation wrote).
"""

from __future__ import annotations

import bisect
import codecs
import io
import re
import tokenize
from dataclasses import dataclass

_BOM = codecs.BOM_UTF8
# a PEP 263 cookie in the first two lines (tokenize.detect_encoding then says whether it counts)
_COOKIE = re.compile(rb"^[ \t\f]*#.*?(c)oding[:=][ \t]*([-\w.]+)", re.M)
_TEXT_COOKIE = re.compile(r"^[ \t\f]*#.*?(c)oding[:=][ \t]*([-\w.]+)", re.M)
_BARE_CR = re.compile(rb"\r(?!\n)")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


@dataclass
class Decoded:
    """The UTF-8 bytes the span pass reads, and how to write its edits back."""

    data: bytes
    encoding: str  # the codec that writes text back ("utf-8" for a file with a BOM)
    bare_cr: bool  # the file's first line break is a bare CR: inserted lines end so too
    marks: list[int]  # offsets into ``data`` from which ``origins`` holds...
    origins: list[int]  # ...the matching offset into the file's own bytes
    text: str | None = None  # a stateful encoding's text, re-encoded whole (marks unused)

    def original_offset(self, offset: int) -> int:
        i = bisect.bisect_right(self.marks, offset) - 1
        return self.origins[i] + offset - self.marks[i]

    def encode(self, new: bytes) -> bytes:
        return self._line_breaks(new.decode("utf-8")).encode(self.encoding)

    def _line_breaks(self, text: str) -> str:
        return re.sub(r"(?<!\r)\n", "\r", text) if self.bare_cr else text

    def apply(self, source: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
        """``source`` with the span pass's edits (offsets into ``data``) made."""
        if self.text is not None:
            return self._apply_whole(self.text, edits)
        out, pos = [], 0
        for start, end, new in edits:
            first = self.original_offset(start)
            out += [source[pos:first], self.encode(new)]
            pos = self.original_offset(end)
        out.append(source[pos:])
        return b"".join(out)

    def _apply_whole(self, text: str, edits: list[tuple[int, int, bytes]]) -> bytes:
        """The edits made in the UTF-8 form of the file's text (``data`` but for the cookie and
        bare CRs, each the same length), and that text encoded whole."""
        utf8 = text.encode("utf-8")
        out, pos = [], 0
        for start, end, new in edits:
            out += [utf8[pos:start], self._line_breaks(new.decode("utf-8")).encode("utf-8")]
            pos = end
        out.append(utf8[pos:])
        return b"".join(out).decode("utf-8").encode(self.encoding)


def decode(source: bytes) -> Decoded | None:
    """None for a plain UTF-8 file (the span pass reads it as it is); else its decoded form.
    Raises UnicodeDecodeError, SyntaxError (a bad cookie) or LookupError (an unknown encoding)
    as Python would refuse the file."""
    bare_cr = b"\r" in source and _BARE_CR.search(source) is not None
    cookie = _cookie(source)
    plain_cookie = cookie is None or _is_utf8(cookie)
    if not bare_cr and plain_cookie and not source.startswith(_BOM):
        source.decode("utf-8")  # (the stdlib parser lets bad bytes in comments through)
        return None
    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    text = source.decode(encoding)
    data = bytearray(text.encode("utf-8"))
    if cookie is not None and not plain_cookie:  # the UTF-8 bytes must not be read as latin-1
        at = _cookie_offset(text)
        data[at : at + 1] = b"C"
    data = bytearray(_BARE_CR.sub(b"\n", bytes(data)))
    bom = len(_BOM) if encoding == "utf-8-sig" else 0
    writer = "utf-8" if encoding in ("utf-8-sig", "utf-8") else encoding
    offsets = _offsets(text, writer, source, bom)
    first_break = re.search(rb"\r\n?|\n", source)
    return Decoded(
        bytes(data),
        writer,
        first_break is not None and first_break.group(0) == b"\r",
        *(offsets or ([0], [bom])),
        text=None if offsets else text,
    )


def _cookie(source: bytes) -> bytes | None:
    """The encoding the file's coding cookie names, if it has one."""
    match = _COOKIE.search(b"\n".join(source.split(b"\n", 2)[:2]))
    return match.group(2) if match else None


def _is_utf8(name: bytes) -> bool:
    name = name[:12].lower().replace(b"_", b"-")
    return name in (b"utf-8", b"utf8") or name.startswith(b"utf-8-")


def _cookie_offset(text: str) -> int:
    """The offset in the UTF-8 form of the "c" of the cookie's "coding"."""
    head = "\n".join(text.split("\n", 2)[:2])
    match = _TEXT_COOKIE.search(head)
    assert match is not None  # found in the bytes, so in the text
    return len(head[: match.start(1)].encode("utf-8"))


def _offsets(text: str, writer: str, source: bytes, bom: int) -> tuple[list[int], list[int]] | None:
    """Break points of the offset map from the UTF-8 form to the file's bytes: one after each
    non-ASCII character (ASCII is one byte in both); None for an encoding whose characters are
    not written one by one."""
    marks, origins = [0], [bom]
    if writer == "utf-8":
        return marks, origins
    utf8 = original = 0
    last = 0
    for match in _NON_ASCII.finditer(text):
        i = match.start()
        ascii_run = i - last
        utf8 += ascii_run
        original += ascii_run
        char = text[i]
        written = char.encode(writer)
        if source[bom + original : bom + original + len(written)] != written:
            return None
        utf8 += len(char.encode("utf-8"))
        original += len(written)
        marks.append(utf8)
        origins.append(bom + original)
        last = i + 1
    if source[bom + original :] != text[last:].encode(writer):
        return None
    return marks, origins
