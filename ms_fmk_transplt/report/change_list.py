"""change_list.csv: one row per change (columns of the original tool, then Rule/Before/After).

Line numbers are those of the migrated file, so a user can jump from a row to the new code; in
analysis mode (nothing is written) they are those of the input file.
"""

from __future__ import annotations

from pathlib import Path

from ms_fmk_transplt.catalogue.rule_catalog import caveat_text
from ms_fmk_transplt.engine.rules import registry
from ms_fmk_transplt.records import RunResult
from ms_fmk_transplt.report.csv_rows import write_rows
from ms_fmk_transplt.report.statistics import file_order
from ms_fmk_transplt.safe_names import shown

HEADER = ("File", "Start Line", "End Line", "Operation Type", "Message", "Rule", "Before", "After")


def rows(result: RunResult) -> list[tuple[str, int, int, str, str, str, str, str]]:
    migrated = not result.options.analyse
    registry.declared({e.rule for e in result.events})  # (their caveats: workers declared them)
    out: list[tuple[str, int, int, str, str, str, str, str]] = []
    orders: dict[str, tuple[str, int]] = {}  # each file's, once (a file may have 200,000 rows)
    names: dict[str, str] = {}

    def order(file: str) -> tuple[str, int]:
        if file not in orders:
            orders[file] = file_order(file)
        return orders[file]

    for event in sorted(result.events, key=lambda e: (order(e.file), e.out_start_line, e.rule)):
        if event.file not in names:
            names[event.file] = shown(event.file)
        start, end = (
            (event.out_start_line, event.out_end_line)
            if migrated
            else (event.start_line, event.end_line)
        )
        out.append(
            (
                names[event.file],
                start,
                end,
                event.operation.value,
                _message(event.message, event.rule) if event.caveat else event.message,
                event.rule,
                event.before,
                event.after,
            )
        )
    return out


def write(path: Path, result: RunResult) -> None:
    write_rows(path, HEADER, rows(result))


def _message(message: str, rule: str) -> str:
    """A change with a caveat says so in its row (it is counted among the caveats to check)."""
    caveat = caveat_text(rule)
    return message if caveat in message else f"{message} [caveat: {caveat}]"
