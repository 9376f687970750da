"""unsupported_op.xlsx (sheets "Unsupported" and "Summary") and unsupported_op.csv: what is left
to do on the NPU, one row per occurrence, read only from the recorded notices and events."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

from ms_fmk_transplt.engine.rules.family_exports import TF_CATEGORY
from ms_fmk_transplt.records import RunResult
from ms_fmk_transplt.report import advice_csv, effort, library_api
from ms_fmk_transplt.report.csv_rows import write_rows
from ms_fmk_transplt.report.links import relative_url
from ms_fmk_transplt.report.statistics import (
    api_counts,
    category_counts,
    caveat_split,
    cell_file,
    framework_counts,
    open_work_notices,
    run_buckets,
)
from ms_fmk_transplt.safe_names import shown
from ms_fmk_transplt.safety.fs_safety import write_file

if TYPE_CHECKING:  # (openpyxl only when the workbook is built: a re-run may reuse it)
    from openpyxl.worksheet.worksheet import Worksheet

HEADER = ("File", "Start Line", "End Line", "OP", "Category", "Tips", "Action", "Rule")
# The CSV also has the documented wording of a translated tip (the operator-support lists are in
# Chinese), after Tips so that Action and Rule stay the last columns; the workbook keeps it in a
# note on the Tips cell instead: printed pages stay one table of English (no column of glyphs a
# machine without a CJK font prints as boxes), and the note is there on screen.
CSV_HEADER = (*HEADER[:6], "Tip (original)", *HEADER[6:])
ORIGINAL_NOTE = "Original (zh): "
CAPS = (45, 8, 8, 42, 18, 52, 8, 30)  # widest a column grows before its text wraps


def rows(result: RunResult) -> list[tuple[str, int, int, str, str, str, str, str]]:
    migrated = not result.options.analyse
    return [
        (shown(n.file), *n.lines(migrated), n.api, n.category, n.tip, n.action, n.rule)
        for n in open_work_notices(result)
    ]


def originals(result: RunResult) -> list[str]:
    """Per row of ``rows``: the documented (untranslated) wording of its tip, or ""."""
    operators = result.tables.operators
    out = []
    for n in open_work_notices(result):
        entry = operators.entry(n.api) if n.category in OPERATOR_CATEGORIES else None
        out.append(entry.tip_original if entry and entry.tip == n.tip else "")
    return out


OPERATOR_CATEGORIES = ("unsupported_op", "restricted_op")


def write_csv(path: Path, result: RunResult) -> None:
    data = [(*r[:6], o, *r[6:]) for r, o in zip(rows(result), originals(result))]
    write_rows(path, CSV_HEADER, data)


def write_xlsx(path: Path, result: RunResult, html_name: str = "report.html") -> None:
    """The workbook; each row's File cell links to the migrated file, its Rule cell to the
    rule's page in ``html_name``."""
    from openpyxl import Workbook

    data = rows(result)
    wb = Workbook()
    ws = cast("Worksheet", wb.active)
    ws.title = "Unsupported"
    _rows_sheet(ws, data, html_name, link_files=not result.options.analyse)
    for row, original in enumerate(originals(result), start=2):
        if original:
            _original_note(ws.cell(row=row, column=6), original)
    _summary_sheet(wb.create_sheet("Summary"), result, data)
    advice_csv.add_sheet(wb, result)
    if result.options.analyse:
        effort.add_sheet(wb, result)
    if result.options.library:
        library_api.add_sheet(wb, result)
    buffer = io.BytesIO()
    wb.save(buffer)
    write_file(path, buffer.getvalue())


def _rows_sheet(
    ws: Worksheet, data: list[tuple[Any, ...]], html_name: str, link_files: bool
) -> None:
    from openpyxl.utils import get_column_letter

    from ms_fmk_transplt.report import sheet_style as style

    numeric = (2, 3)
    style.header(ws, HEADER, numeric)
    for row in data:
        cells = style.body_row(ws, row, numeric)
        file, rule = cells[0], cells[7]
        if link_files and cell_file(row[0]) == row[0]:  # a file, not a notebook's cell
            style.link(file, relative_url(row[0]), style.WRAP)
        style.link(rule, f"{relative_url(html_name)}#rule-{quote(row[7], safe='.')}", style.WRAP)
    ws.freeze_panes = "A2"
    ws.auto_filter.ref = f"A1:{get_column_letter(len(HEADER))}{max(1, len(data) + 1)}"
    manual = sum(1 for r in data if r[6] != "caveat")
    style.totals_row(
        ws, [f"Total: {len(data)} rows", "", "", "", "", "", f"{manual} manual", ""], numeric
    )
    style.widths(ws, CAPS, whole=(1, 4, 8))
    style.printable(ws)


def _original_note(cell: Any, original: str) -> None:
    from openpyxl.comments import Comment

    note = Comment(ORIGINAL_NOTE + original, "ms_fmk_transplt")
    note.width, note.height = 320, 40 + 15 * (len(original) // 40)  # pixels
    cell.comment = note


def _summary_sheet(summary: Worksheet, result: RunResult, data: list[tuple[Any, ...]]) -> None:
    from ms_fmk_transplt.report import sheet_style as style

    b = run_buckets(result)
    style.header(summary, ("Item", "Value"))
    target = result.tables
    numbering = "input files (--analyse)" if result.options.analyse else "migrated files"
    operators = target.operators
    used = operators.document_version or "none"
    items: list[tuple[str, object]] = [
        ("target torch_npu version", target.torch_npu_version),
        ("line numbers in", numbering),
        ("operator support list used", f"{used} ({operators.note})" if operators.note else used),
        ("changes (change_list.csv rows)", b.changes),
        ("  of them with a caveat", b.caveat_changes),
        ("  of them added imports / TODO comments", b.bookkeeping),
        *(
            [
                (
                    "  of them option edits of lines not CUDA-specific (-r, distributed)",
                    b.option_edits,
                )
            ]
            if b.option_edits
            else []
        ),
        ("needs manual work (manual rows, sheet Unsupported)", b.manual),
        ("caveat rows (sheet Unsupported)", b.caveat_rows),
        (f"caveats to check ({caveat_split(b)})", b.caveat),
        ("CUDA-specific items (changes - bookkeeping - option edits + rows)", b.total),
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
            summary.cell(row=summary.max_row, column=2).number_format = style.PERCENT
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
    style.widths(summary, (50, 40, 10, 10, 60), whole=(1,))
    style.printable(summary, title_row=False)  # several tables: no one header to repeat
