"""advice.csv and the "Advice" sheet of unsupported_op.xlsx: optional NPU performance, precision
and environment work (engine/rules/advice/), kept apart from the must-fix rows. Read only from
the recorded notices; the expected effect and the source come from rules/advice.json by rule id."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ms_fmk_transplt.records import RunResult
from ms_fmk_transplt.report.csv_rows import write_rows
from ms_fmk_transplt.report.statistics import file_order
from ms_fmk_transplt.safe_names import shown

if TYPE_CHECKING:  # (openpyxl only when a workbook is written: a re-run may reuse it)
    from openpyxl.workbook import Workbook

HEADER = (
    "File",
    "Line",
    "API",
    "Kind",
    "Advice",
    "Expected effect",
    "Documented in",
    "Rule",
)
CAPS = (45, 8, 36, 13, 42, 30, 30, 30)  # widest a column grows before its text wraps
Row = tuple[str, int, str, str, str, str, str, str]


def rows(result: RunResult) -> list[Row]:
    table = result.tables.advice
    migrated = not result.options.analyse
    out: list[Row] = []
    for n in result.notices:
        if not n.advice:
            continue
        entry = table.by_id.get(n.rule)
        effect = entry.effect if entry else ""
        documented = entry.documented if entry else ""
        start, _ = n.lines(migrated)
        out.append((shown(n.file), start, n.api, n.category, n.tip, effect, documented, n.rule))
    return sorted(out, key=lambda r: (file_order(r[0]), r[1], r[7], r[2]))


def write_csv(path: Path, result: RunResult) -> None:
    write_rows(path, HEADER, rows(result))


def add_sheet(wb: Workbook, result: RunResult) -> None:
    """The "Advice" sheet."""
    from openpyxl.utils import get_column_letter

    from ms_fmk_transplt.report import sheet_style as style

    data = rows(result)
    ws = wb.create_sheet("Advice")
    style.header(ws, HEADER, (2,))
    for row in data:
        style.body_row(ws, row, (2,))
    ws.freeze_panes = "A2"
    ws.auto_filter.ref = f"A1:{get_column_letter(len(HEADER))}{max(1, len(data) + 1)}"
    style.totals_row(ws, [f"Total: {len(data)} rows"] + [""] * (len(HEADER) - 1))
    style.widths(ws, CAPS, whole=(1, 3, 8))
    style.printable(ws)
