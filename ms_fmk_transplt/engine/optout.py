"""Opt-out comments users put in their code.

* ``# msft: skip-file`` anywhere in a file: the file is left exactly as it is, with no report rows.
* ``# msft: ignore`` at the end of a line: that line keeps its original text and its changes and
  unsupported rows are dropped; ``# msft: ignore[rule-id, ...]`` does so only when every change
  on the line comes from the listed rules (a line cannot be half-migrated).
"""

from __future__ import annotations

import re

SKIP_FILE = re.compile(rb"^[ \t]*#[ \t]*msft:[ \t]*skip-file\b", re.M)
IGNORE = re.compile(r"#\s*msft:\s*ignore(?:\[([^\]]*)\])?")


def skips_file(source: bytes) -> bool:
    return b"msft:" in source and SKIP_FILE.search(source) is not None


def ignored_lines(source: bytes) -> dict[int, frozenset[str] | None]:
    """Input line -> the rule ids it ignores (None: all)."""
    if b"msft:" not in source:
        return {}
    out: dict[int, frozenset[str] | None] = {}
    for number, line in enumerate(source.decode("latin-1").splitlines(), start=1):
        match = IGNORE.search(line)
        if match:
            rules = match.group(1)
            out[number] = (
                frozenset(r.strip() for r in rules.split(",") if r.strip()) if rules else None
            )
    return out
