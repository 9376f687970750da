"""unsupported_op.xlsx (sheets "Unsupported" and "Summary") and unsupported_op.csv: what is left
to do on the NPU, one row per occurrence, read only from the recorded notices and events."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from openpyxl import Workbook
from openpyxl.styles import Font, PatternFill
from openpyxl.utils import get_column_letter

from ms_fmk_transplt.report import advice, effort
from ms_fmk_transplt.report.statistics import Buckets, count_buckets
from ms_fmk_transplt.tables import load_tables

if TYPE_CHECKING:
    from ms_fmk_transplt.pipeline import RunResult

HEADER = ("File", "Start Line", "End Line", "OP", "Category", "Tips", "Action", "Rule")
WIDTHS = (40, 11, 10, 45, 18, 120, 9, 30)
_BOLD = Font(bold=True)
_FILL = PatternFill("solid", fgColor="DDEBF7")


def rows(result: RunResult) -> list[tuple[str, int, int, str, str, str, str, str]]:
    migrated = not result.options.analyse
    out = []
    for n in result.notices:
        if not n.open_work:
            continue
        start, end = n.lines(migrated)
        out.append((n.file, start, end, n.api, n.category, n.tip, n.action, n.rule))
    return sorted(out, key=lambda r: (r[0], r[1], r[2], r[3]))


def buckets(result: RunResult) -> Buckets:
    return count_buckets(result.events, result.notices)


def top_apis(result: RunResult, n: int = 10) -> list[tuple[str, str, int]]:
    counts = Counter((r[3], r[4]) for r in rows(result))
    return [(api, cat, c) for (api, cat), c in counts.most_common(n)]


def write_csv(path: Path, result: RunResult) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(HEADER)
        writer.writerows(rows(result))


def _header(ws, values) -> None:
    ws.append(list(values))
    for cell in ws[ws.max_row]:
        cell.font, cell.fill = _BOLD, _FILL


def _printable(ws) -> None:
    """Landscape, all columns on one page width (for printing / PDF export)."""
    ws.page_setup.orientation = "landscape"
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.print_title_rows = "1:1"


def write_xlsx(path: Path, result: RunResult, html_name: str = "report.html") -> None:
    """The workbook; each row's Rule cell links to the rule's page in ``html_name``."""
    table = load_tables().unsupported
    data = rows(result)
    wb = Workbook()
    ws = wb.active
    ws.title = "Unsupported"
    _header(ws, HEADER)
    for row in data:
        ws.append(list(row))
        rule = ws.cell(row=ws.max_row, column=len(HEADER))
        rule.hyperlink, rule.style = f"{html_name}#rule-{row[7]}", "Hyperlink"
    for i, width in enumerate(WIDTHS, start=1):
        ws.column_dimensions[get_column_letter(i)].width = width
    ws.freeze_panes = "A2"
    ws.auto_filter.ref = f"A1:{get_column_letter(len(HEADER))}{max(1, len(data) + 1)}"

    summary = wb.create_sheet("Summary")
    b = buckets(result)
    _header(summary, ("Item", "Count"))
    target = load_tables(result.options.target_version)
    summary.append(["target torch_npu version", target.torch_npu_version])
    numbering = "input files (--analyse)" if result.options.analyse else "migrated files"
    summary.append(["line numbers are those of the", numbering])
    operators = target.operators
    summary.append(["operator support list used", operators.document_version or "none"])
    summary.append(["migrated automatically", b.automatic])
    summary.append(["migrated with a caveat", b.caveat])
    summary.append(["needs manual work", b.manual])
    summary.append(["conversion rate", b.conversion_rate])
    summary.cell(row=summary.max_row, column=2).number_format = "0.0%"
    summary.append(["advice rows (sheet Advice, not counted above)", len(advice.rows(result))])
    summary.append([])
    _header(summary, ("Category", "Count", "Manual", "Caveat", "Description"))
    by_cat = Counter(r[4] for r in data)
    manual = Counter(r[4] for r in data if r[6] != "caveat")
    for category, description in table.categories.items():
        count = by_cat.get(category, 0)
        summary.append(
            [category, count, manual.get(category, 0), count - manual.get(category, 0), description]
        )
    summary.append([])
    _header(summary, ("API", "Category", "Count"))
    for (api, category), count in Counter((r[3], r[4]) for r in data).most_common():
        summary.append([api, category, count])
    for i, width in enumerate((45, 18, 12, 12, 60), start=1):
        summary.column_dimensions[get_column_letter(i)].width = width
    _printable(ws)
    _printable(summary)
    advice.add_sheet(wb, result, _header, _printable)
    if result.options.analyse:
        effort.add_sheet(wb, result, _header, _printable)
    wb.save(path)
