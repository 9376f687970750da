"""Opt-out comments users put in their code.

* ``# msft: skip-file`` anywhere in a file: the file is left exactly as it is, with no report rows.
* ``# msft: ignore`` at the end of a line: that line keeps its original text and its changes and
  unsupported rows are dropped; ``# msft: ignore[rule-id, ...]`` does so only when every change
  on the line comes from the listed rules (a line cannot be half-migrated).
"""

from __future__ import annotations

import re

from ms_fmk_transplt.catalogue.rule_catalog import NOTICE, OWN_COMMENTS, declare

IGNORE_LINE = declare(
    "optout.ignore",
    "`# msft: ignore` / `# msft: ignore[<id>, ...]`: a line kept as written, noted in the log",
    "A comment at the end of a line keeps that line's original text and drops its rows: all of "
    "them with `# msft: ignore`, or only when every change on the line comes from the listed rule "
    "ids (or id prefixes such as `unsupported`) with `# msft: ignore[<id>, ...]`, since a line is "
    "never half-migrated. Each line the comment kept is an INFO line of the log, so a reviewer "
    "sees what was deliberately left.",
    kind=NOTICE,
    opt_out="remove the comment",
    fixed=OWN_COMMENTS,
)
SKIP = declare(
    "optout.skip_file",
    "`# msft: skip-file`: a file left exactly as it is, noted in the log",
    "A `# msft: skip-file` comment on a line of its own anywhere in a file leaves the whole file "
    "alone: it is copied byte for byte and gets no report rows. The log has an INFO line for it.",
    kind=NOTICE,
    opt_out="remove the comment",
    fixed=OWN_COMMENTS,
)

SKIP_FILE = re.compile(rb"^[ \t]*#[ \t]*msft:[ \t]*skip-file\b", re.M)
IGNORE = re.compile(r"#\s*msft:\s*ignore(?:\[([^\]]*)\])?")


def skip_file_line(source: bytes) -> int:
    """The line of the file's ``# msft: skip-file`` comment (0: none)."""
    match = SKIP_FILE.search(source) if b"msft:" in source else None
    return source.count(b"\n", 0, match.start()) + 1 if match else 0


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
