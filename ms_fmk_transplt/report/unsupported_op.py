"""unsupported_op.xlsx (sheets "Unsupported" and "Summary") and unsupported_op.csv: what is left
to do on the NPU, one row per occurrence, read only from the recorded notices and events."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

from openpyxl import Workbook
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from ms_fmk_transplt.engine.rules.tf.tf_edits import CATEGORY as TF_CATEGORY
from ms_fmk_transplt.records import RunResult
from ms_fmk_transplt.report import advice_csv, effort
from ms_fmk_transplt.report import sheet_style as style
from ms_fmk_transplt.report.csv_rows import write_rows
from ms_fmk_transplt.report.links import relative_url
from ms_fmk_transplt.report.statistics import (
    api_counts,
    category_counts,
    caveat_split,
    framework_counts,
    open_work_notices,
    run_buckets,
)
from ms_fmk_transplt.safe_names import shown

HEADER = ("File", "Start Line", "End Line", "OP", "Category", "Tips", "Action", "Rule")
WIDTHS = (40, 11, 10, 45, 18, 120, 9, 30)


def rows(result: RunResult) -> list[tuple[str, int, int, str, str, str, str, str]]:
    migrated = not result.options.analyse
    return [
        (shown(n.file), *n.lines(migrated), n.api, n.category, n.tip, n.action, n.rule)
        for n in open_work_notices(result)
    ]


def write_csv(path: Path, result: RunResult) -> None:
    write_rows(path, HEADER, rows(result))


def write_xlsx(path: Path, result: RunResult, html_name: str = "report.html") -> None:
    """The workbook; each row's File cell links to the migrated file, its Rule cell to the
    rule's page in ``html_name``."""
    data = rows(result)
    wb = Workbook()
    ws = cast(Worksheet, wb.active)
    ws.title = "Unsupported"
    _rows_sheet(ws, data, html_name, link_files=not result.options.analyse)
    _summary_sheet(wb.create_sheet("Summary"), result, data)
    advice_csv.add_sheet(wb, result)
    if result.options.analyse:
        effort.add_sheet(wb, result)
    wb.save(path)


def _rows_sheet(
    ws: Worksheet, data: list[tuple[Any, ...]], html_name: str, link_files: bool
) -> None:
    numeric = (2, 3)
    style.header(ws, HEADER, numeric)
    for row in data:
        style.body_row(ws, row, numeric)
        file, rule = ws.cell(row=ws.max_row, column=1), ws.cell(row=ws.max_row, column=8)
        if link_files and "#" not in row[0]:
            style.link(file, relative_url(row[0]), style.WRAP)
        style.link(rule, f"{relative_url(html_name)}#rule-{quote(row[7], safe='.')}", style.WRAP)
    ws.freeze_panes = "A2"
    ws.auto_filter.ref = f"A1:{get_column_letter(len(HEADER))}{max(1, len(data) + 1)}"
    manual = sum(1 for r in data if r[6] != "caveat")
    style.totals_row(
        ws, [f"Total: {len(data)} rows", "", "", "", "", "", f"{manual} manual", ""], numeric
    )
    style.widths(ws, WIDTHS)
    style.printable(ws)


def _summary_sheet(summary: Worksheet, result: RunResult, data: list[tuple[Any, ...]]) -> None:
    b = run_buckets(result)
    style.header(summary, ("Item", "Count"), (2,))
    target = result.tables
    numbering = "input files (--analyse)" if result.options.analyse else "migrated files"
    items = [
        ("target torch_npu version", target.torch_npu_version),
        ("line numbers are those of the", numbering),
        ("operator support list used", target.operators.document_version or "none"),
        ("changes (change_list.csv rows)", b.changes),
        ("  of them with a caveat", b.caveat_changes),
        ("  of them added imports / TODO comments", b.bookkeeping),
        ("needs manual work (manual rows, sheet Unsupported)", b.manual),
        ("caveat rows (sheet Unsupported)", b.caveat_rows),
        (f"caveats to check ({caveat_split(b)})", b.caveat),
        ("CUDA-specific items (changes without bookkeeping + rows)", b.total),
        ("converted (items - manual)", b.converted),
        ("conversion rate (converted / items)", b.conversion_rate),
        ("advice rows (sheet Advice, not counted above)", len(advice_csv.rows(result))),
    ]
    for c in framework_counts(result.files):  # a run with TensorFlow files: each share
        items.append((f"{c.name}: Python files / changed", f"{c.files} / {c.changed}"))
        items.append((f"{c.name}: conversion rate", c.buckets.conversion_rate))
    for item in items:
        style.body_row(summary, item, (2,))
        if "conversion rate" in str(item[0]):
            summary.cell(row=summary.max_row, column=2).number_format = "0.0%"
    summary.append([])
    style.header(summary, ("Category", "Rows", "Manual", "Caveat rows", "Description"), (2, 3, 4))
    notices = open_work_notices(result)  # the rows of ``data``, in the same order
    by_cat, manual = category_counts(notices), category_counts(notices, manual_only=True)
    tensorflow = bool(framework_counts(result.files))
    for category, description in target.unsupported.categories.items():
        if category == TF_CATEGORY and not tensorflow:
            continue  # listed for runs with TensorFlow files only
        count, hand = by_cat.get(category, 0), manual.get(category, 0)
        style.body_row(summary, (category, count, hand, count - hand, description), (2, 3, 4))
    hand = sum(manual.values())
    style.totals_row(summary, ("Total", len(data), hand, len(data) - hand, ""), (2, 3, 4))
    summary.append([])
    style.header(summary, ("API", "Category", "Count"), (3,))
    for (api, category), count in api_counts(notices).most_common():
        style.body_row(summary, (api, category, count), (3,))
    style.widths(summary, (45, 18, 12, 12, 60))
    style.printable(summary)
