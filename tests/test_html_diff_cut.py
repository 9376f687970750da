"""report.html's diff of a file is cut after MAX_DIFF_LINES lines (report/html_diff.py): the
hunks before the cut keep the rules of each changed line, and a file changed on every line (a
large generated one) gives no hunk at all, without going through its events."""

from __future__ import annotations

from datetime import datetime

from ms_fmk_transplt.events import ChangeEvent, FileStatus, Operation
from ms_fmk_transplt.records import FileRecord
from ms_fmk_transplt.report import html_diff


def _record(changed: list[int]) -> FileRecord:
    events = [
        ChangeEvent("m.py", n, n, f"rule.r{n}", Operation.MODIFY, "m", "a", "b", n, n)
        for n in changed
    ]
    return FileRecord("m.py", FileStatus.CHANGED, True, True, datetime.now(), events=events)


def test_hunks_before_the_cut_keep_their_rules(monkeypatch) -> None:
    monkeypatch.setattr(html_diff, "MAX_DIFF_LINES", 30)
    old = [f"x{n}\n" for n in range(1, 101)]
    changed = [5, 40, 90]  # three hunks of 1 + 1 changed lines and 3 + 3 of context: 8 each
    new = [f"y{n}\n" if n in changed else line for n, line in enumerate(old, 1)]
    diff = html_diff.file_diff(_record(changed), old, new)
    assert not diff["cut"] and len(diff["hunks"]) == 3
    rules = [line[4] for hunk in diff["hunks"] for line in hunk["lines"] if line[0] != " "]
    assert rules == [[f"rule.r{n}"] for n in changed for _ in ("-", "+")]
    monkeypatch.setattr(html_diff, "MAX_DIFF_LINES", 20)  # the third hunk passes the cut
    diff = html_diff.file_diff(_record(changed), old, new)
    assert diff["cut"] and [h["header"] for h in diff["hunks"]] == [
        "@@ -2,7 +2,7 @@",
        "@@ -37,7 +37,7 @@",
    ]


def test_a_file_changed_on_every_line_gives_no_hunk(monkeypatch) -> None:
    monkeypatch.setattr(html_diff, "MAX_DIFF_LINES", 50)
    old = [f"x{n}\n" for n in range(1, 201)]
    new = [f"y{n}\n" for n in range(1, 201)]
    marked: list[int] = []
    monkeypatch.setattr(html_diff, "_mark", lambda where, start, end, event: marked.append(start))
    assert html_diff.file_diff(_record(list(range(1, 201))), old, new) == {
        "hunks": [],
        "cut": True,
    }
    assert marked == []  # no line shown: no event gone through
