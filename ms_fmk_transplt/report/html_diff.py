"""The diffs of report.html: input vs migrated file, each changed line with the rules that
changed it. Taken straight from the events where the output is the input with lines changed in
place and whole lines inserted (always, for the engine's own changes); difflib otherwise."""

from __future__ import annotations

import difflib
from typing import Any

from ms_fmk_transplt.events import ChangeEvent, Operation
from ms_fmk_transplt.records import FileRecord

CONTEXT = 3  # unchanged lines around each change in a diff
MAX_DIFF_LINES = 4000  # a larger diff is cut (the file itself is in the output tree)


def file_diff(record: FileRecord, old: list[str], new: list[str]) -> dict[str, Any]:
    """The JSON the page's script renders: hunks of [tag, input line, output line, text,
    rule ids] (unified or side by side), cut after MAX_DIFF_LINES lines."""
    notebook = record.path.endswith(".ipynb")  # its events count lines of cells, not of the file
    merged = (None if notebook else _aligned(old, new, record.events)) or _matched(old, new)
    ranges = _hunk_ranges([tag != " " for tag, _, _ in merged])
    # the rules of the lines shown, those of the hunks before the cut (a large generated
    # file's 200,000 events are not all gone through for 4,000 lines, or none)
    shown, last_old, last_new = 0, 0, 0
    for first, last in ranges:
        shown += last - first
        if shown > MAX_DIFF_LINES:
            break
        for _, o, n in merged[first:last]:
            last_old, last_new = max(last_old, o), max(last_new, n)
    new_rules: dict[int, list[str]] = {}
    old_rules: dict[int, list[str]] = {}
    for e in [] if notebook else record.events:
        if e.out_start_line <= last_new:
            _mark(new_rules, e.out_start_line, e.out_end_line, e)
        if e.operation != Operation.INSERT and e.start_line <= last_old:
            _mark(old_rules, e.start_line, e.end_line, e)
    hunks: list[dict[str, Any]] = []
    total = 0
    for first, last in ranges:
        total += last - first  # (the hunk's lines: cut before they are made)
        if total > MAX_DIFF_LINES:
            return {"hunks": hunks, "cut": True}
        part: list[list[Any]] = []
        for tag, o, n in merged[first:last]:
            text = new[n - 1] if n else old[o - 1]
            rules = old_rules.get(o, []) if tag == "-" else new_rules.get(n, []) if n else []
            part.append([tag, o or "", n or "", text, rules if tag != " " else []])
        olds = [line[1] for line in part if line[1]]
        news = [line[2] for line in part if line[2]]
        header = (
            f"@@ -{olds[0] if olds else 0},{len(olds)} +{news[0] if news else 0},{len(news)} @@"
        )
        hunks.append({"header": header, "lines": part})
    return {"hunks": hunks, "cut": False}


Merged = list[tuple[str, int, int]]  # (" ", "-" or "+"; input line or 0; output line or 0)


def _aligned(old: list[str], new: list[str], events: list[ChangeEvent]) -> Merged | None:
    """The diff straight from the events: the engine changes lines in place and inserts whole
    lines, so the output is the input with the INSERT lines added (None if not: then difflib)."""
    inserted = {
        n
        for e in events
        if e.operation == Operation.INSERT
        for n in range(e.out_start_line, e.out_end_line + 1)
    }
    if len(new) - len(inserted) != len(old):
        return None
    merged: Merged = []
    o = 0
    for n in range(1, len(new) + 1):
        if n in inserted:
            merged.append(("+", 0, n))
            continue
        o += 1
        if old[o - 1] == new[n - 1]:
            merged.append((" ", o, n))
        else:
            merged += [("-", o, 0), ("+", 0, n)]
    return merged


def _matched(old: list[str], new: list[str]) -> Merged:
    merged: Merged = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "equal":
            merged += [(" ", a1 + k + 1, b1 + k + 1) for k in range(a2 - a1)]
        else:
            merged += [("-", a + 1, 0) for a in range(a1, a2)]
            merged += [("+", 0, b + 1) for b in range(b1, b2)]
    return merged


def _hunk_ranges(changed: list[bool]) -> list[tuple[int, int]]:
    """[first, last) index ranges of the changed entries with CONTEXT entries around them."""
    ranges: list[tuple[int, int]] = []
    for i, flag in enumerate(changed):
        if not flag:
            continue
        first, last = max(0, i - CONTEXT), min(len(changed), i + CONTEXT + 1)
        if ranges and first <= ranges[-1][1]:
            ranges[-1] = (ranges[-1][0], last)
        else:
            ranges.append((first, last))
    return ranges


def _mark(where: dict[int, list[str]], start: int, end: int, event: ChangeEvent) -> None:
    for line in range(start, max(start, end) + 1):
        if event.rule not in where.setdefault(line, []):
            where[line].append(event.rule)
