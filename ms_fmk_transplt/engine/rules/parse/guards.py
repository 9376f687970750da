"""Cheap checks before parsing, so that no input can crash or exhaust the tool.

* Files larger than the size limit are copied unchanged (``--max-file-size``; default 32 MiB,
  and 5 MiB for a file a LibCST stage of -r/-sim/distributed acts on: LibCST needs about a
  thousand times a file's size in memory, an 11 MB generated file took it 13 GB and 14 minutes;
  the span pass migrates a 10 MB file in seconds).
* Brackets nested deeper than CPython accepts (200: "too many nested parentheses") cannot run
  anyway, and far deeper nesting overflows the native parser's stack (a segfault); such files
  are copied unchanged.
"""

from __future__ import annotations

import re

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, SKIP_FILE, UNREAD_FILE, declare
from ms_fmk_transplt.events import Notice, Severity
from ms_fmk_transplt.tables import Tables

LIMIT = declare(
    "parse.limit",
    "a file beyond the input guards (size, nesting, depth, memory, time): copied unchanged",
    "Files larger than `--max-file-size` (default 32 MiB; 5 MiB for a file a LibCST stage of "
    "`-r`, `-sim` or `distributed` acts on, since LibCST needs about a thousand times a file's "
    "size in memory), files "
    "nested deeper than CPython accepts (200 brackets), files whose syntax tree is more than 300 "
    "levels deep (a very long expression such as `x + 1 + 1 ...` with hundreds of terms, a long "
    "chain of calls or `elif`s), files with a statement too large to parse within the memory "
    "bound (more than 1,048,576 tokens parsed at once, e.g. a one-line list of millions of "
    "items: the parser needs about 1 KB per token) and files still being migrated after "
    "`--file-timeout` seconds "
    "(default 60) are not migrated, so that no input can exhaust, crash or hang the tool. The "
    "file is copied byte for byte and listed as a `skipped_file` row with the reason; raise "
    "`--max-file-size` to migrate a large generated file.",
    kind=OPEN_WORK,
    opt_out=SKIP_FILE,
    fixed=UNREAD_FILE,
)

MAX_NESTING = 200
_BRACKETS = b"()[]{}"
_OTHER = bytes(b for b in range(256) if b not in _BRACKETS)


def nesting_depth(source: bytes) -> int:
    """Maximum bracket depth (strings and comments are not excluded: an upper bound)."""
    depth = deepest = 0
    for b in source.translate(None, _OTHER):
        if b in b"([{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(0, depth - 1)
    return deepest


def too_large(source: bytes, max_bytes: int, why: str = "") -> str | None:
    if len(source) <= max_bytes:
        return None
    return (
        f"larger than {max_bytes / 2**20:.3g} MiB ({len(source) / 2**20:.1f} MiB){why}; copied "
        "unchanged (raise --max-file-size to migrate it)"
    )


def refusal(source: bytes, max_bytes: int) -> str | None:
    """Why the file must not be parsed, or None."""
    large = too_large(source, max_bytes)
    if large is not None:
        return large
    if source.count(b"(") + source.count(b"[") + source.count(b"{") > MAX_NESTING:
        if nesting_depth(source) > MAX_NESTING:
            return (
                f"brackets nested deeper than {MAX_NESTING} levels (CPython: too many nested "
                "parentheses); copied unchanged"
            )
    return None


BIDI_CONTROL = declare(
    "parse.bidi_control",
    "bidi control characters in the code (trojan source): a row to review the line by eye",
    "Unicode bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C) "
    "change the order in which an editor or a code review shows the characters of a line, so "
    "the code read can differ from the code Python runs (CVE-2021-42574, 'trojan source'), in "
    "code, strings or comments alike. Each line holding one gets a `review` row naming the "
    "characters; the code is migrated as usual and the characters are kept. Found by a search "
    "of the file's bytes for their UTF-8 encodings, which costs nothing on ordinary files.",
    kind=OPEN_WORK,
)

# the UTF-8 encodings of the bidi controls: U+200E/F, U+202A-E, U+2066-9, U+061C
_BIDI = re.compile(b"\xe2\x80[\x8e\x8f\xaa-\xae]|\xe2\x81[\xa6-\xa9]|\xd8\x9c")


def bidi_notices(source: bytes, path: str, tables: Tables) -> list[Notice]:
    """One row per line holding a bidi control character (none, at the cost of two byte
    searches, for a file without any)."""
    if b"\xe2" not in source and b"\xd8\x9c" not in source:
        return []
    lines: dict[int, list[str]] = {}
    line, counted = 1, 0
    for match in _BIDI.finditer(source):
        line += source.count(b"\n", counted, match.start())
        counted = match.start()
        name = f"U+{ord(match.group().decode('utf-8')):04X}"
        if name not in lines.setdefault(line, []):
            lines[line].append(name)
    entry = tables.unsupported.bidi_control
    return [
        Notice.of_entry(
            (path, line),
            BIDI_CONTROL,
            Severity.WARNING,
            f"bidi control character {', '.join(names)}: the line may read differently from "
            "what runs (trojan source)",
            entry,
        )
        for line, names in sorted(lines.items())
    ]
