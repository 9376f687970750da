"""The rows of a rule fixture case, as its goldens hold them: every text field of every row the
reports show (tests/test_rule_fixtures.py compares them), lines those of the output.

* ``<case>.unsupported.csv``: the open-work rows (manual, caveat) of unsupported_op.xlsx;
* ``<case>.advice.csv``: the rows of advice.csv;
* ``<case>.changes.csv``: the changes of change_list.csv, with the caveat text of a change
  whose rule carries one (``rule_catalog.caveat_text``);
* ``<case>.notices.csv``: the other notices (the log's warnings, report.html's notes).

A case with no row of a kind has no file of it. ``python tests/fixture_rows.py`` rewrites every
case's files from the tool's current output (review the diff before committing it). An internal
error's message is compared without its traceback, which names this machine's paths."""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Callable

from ms_fmk_transplt.catalogue.rule_catalog import caveat_text
from ms_fmk_transplt.events import FileResult

Row = tuple[str, ...]
TRACEBACK = "\nTraceback (most recent call last):"  # an internal error's: paths of this machine

HEADERS: dict[str, Row] = {
    "unsupported": ("Start Line", "End Line", "OP", "Category", "Action", "Tip", "Message", "Rule"),
    "advice": ("Line", "API", "Kind", "Rule", "Tip", "Message"),
    "changes": (
        "Start Line",
        "End Line",
        "Operation",
        "Rule",
        "Message",
        "Caveat",
        "Before",
        "After",
    ),
    "notices": ("Line", "Severity", "Message", "Rule"),
}


def _message(message: str) -> str:
    """A row's message without the traceback an internal error's carries."""
    return message.split(TRACEBACK, 1)[0]


def unsupported(result: FileResult) -> list[Row]:
    return [
        (str(s), str(e), n.api, n.category, n.action, n.tip, _message(n.message), n.rule)
        for n in result.notices
        if n.open_work
        for s, e in [n.lines(True)]
    ]


def advice(result: FileResult) -> list[Row]:
    return [
        (str(n.lines(True)[0]), n.api, n.category, n.rule, n.tip, _message(n.message))
        for n in result.notices
        if n.advice
    ]


def changes(result: FileResult) -> list[Row]:
    return [
        (
            str(e.out_start_line),
            str(e.out_end_line),
            e.operation.value,
            e.rule,
            _message(e.message),
            caveat_text(e.rule) if e.caveat else "",
            e.before,
            e.after,
        )
        for e in result.events
    ]


def notices(result: FileResult) -> list[Row]:
    return [
        (str(n.lines(True)[0]), n.severity.value, _message(n.message), n.rule)
        for n in result.notices
        if not n.category and not n.advice
    ]


ROWS: dict[str, Callable[[FileResult], list[Row]]] = {
    "unsupported": unsupported,
    "advice": advice,
    "changes": changes,
    "notices": notices,
}


def golden(case: Path, kind: str) -> Path:
    return case.with_name(f"{case.stem}.{kind}.csv")


def read(case: Path, kind: str) -> list[Row]:
    """The rows of the case's golden of ``kind`` (none without the file), its header checked."""
    path = golden(case, kind)
    if not path.exists():
        return []
    with path.open(encoding="utf-8", newline="") as fh:
        header, *rows = list(csv.reader(fh))
    assert tuple(header) == HEADERS[kind], path
    return [tuple(row) for row in rows]


def _order(row: Row) -> tuple[tuple[int, str], ...]:
    """Numbers as numbers (line 9 before line 10), then text."""
    return tuple((int(cell), "") if cell.isdigit() else (sys.maxsize, cell) for cell in row)


def write(case: Path, kind: str, rows: list[Row]) -> None:
    """The case's golden of ``kind``: ``rows`` in line order, or no file for no rows."""
    path = golden(case, kind)
    if not rows:
        path.unlink(missing_ok=True)
        return
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(HEADERS[kind])
        writer.writerows(sorted(rows, key=_order))


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from helpers import run_case

    from ms_fmk_transplt.commands.rule_docs import fixture_applies

    root = Path(__file__).resolve().parent.parent / "fixtures" / "rules"
    cases = sorted(p for p in root.glob("*/*.py") if not p.name.endswith(".expected.py"))
    cases = [case for case in cases if fixture_applies(case)]  # (python)
    for case in cases:
        result = run_case(case)
        for kind, rows in ROWS.items():
            write(case, kind, rows(result))
    print(f"{len(cases)} cases written")


if __name__ == "__main__":
    main()
