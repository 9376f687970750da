"""How every workbook sheet looks: a bold shaded header, numbers right-aligned under
right-aligned headers, long text wrapped at the top of its cell, a totals row, landscape pages
one sheet wide. Shared by unsupported_op.xlsx (all its sheets) and the zoo summary.

Every row goes through ``_append``, so no cell is ever a formula: openpyxl stores any string
starting with ``=`` as one, and a file or model named ``=HYPERLINK(...)`` would become a live
formula. Text that starts like a formula (``=``, ``+``, ``-``, ``@``, a tab, a carriage return:
``csv_rows.FORMULA_STARTS``) is stored as a text cell with Excel's quote prefix (shown verbatim,
and still text when the user edits it)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, cast

from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from ms_fmk_transplt.report.csv_rows import FORMULA_STARTS
from ms_fmk_transplt.safe_names import shown

BOLD = Font(bold=True)
FILL = PatternFill("solid", fgColor="DDEBF7")
TOTAL_FILL = PatternFill("solid", fgColor="F2F2F2")
WRAP = Alignment(wrap_text=True, vertical="top")
NUMBER = Alignment(horizontal="right", vertical="top")


def header(ws: Worksheet, values: Sequence[str], numeric: Iterable[int] = ()) -> None:
    """The header row; ``numeric``: 1-based columns holding numbers (right-aligned)."""
    numeric = set(numeric)
    for i, cell in enumerate(_append(ws, values), start=1):
        cell.font, cell.fill = BOLD, FILL
        cell.alignment = NUMBER if i in numeric else Alignment(vertical="top", wrap_text=True)


def body_row(ws: Worksheet, values: Sequence[object], numeric: Iterable[int] = ()) -> None:
    """A data row: numbers right-aligned, text wrapped."""
    numeric = set(numeric)
    for i, cell in enumerate(_append(ws, values), start=1):
        cell.alignment = NUMBER if i in numeric else WRAP


def _append(ws: Worksheet, values: Sequence[object]) -> tuple[Any, ...]:
    """Appends a row and returns its cells: characters a workbook cannot hold (control
    characters, undecodable bytes of a file name) escaped, text that starts like a formula kept
    as text. (The row is looked up once: openpyxl computes max_row and max_column by scanning
    every cell of the sheet.)"""
    ws.append([_cell_value(v) for v in values])
    cells: tuple[Any, ...] = ws[ws.max_row]
    for cell in cells:
        _as_text(cell)
    return cells


def _as_text(cell: Any) -> None:
    """A cell whose text starts like a formula: a text cell with the quote prefix."""
    if isinstance(cell.value, str) and cell.value.startswith(FORMULA_STARTS):
        cell.data_type = "s"
        cell.quotePrefix = True


def link(cell: Any, url: str, alignment: Alignment | None = None) -> None:
    """Make ``cell`` a hyperlink to ``url`` (a relative URL, see ``links.py``)."""
    cell.hyperlink, cell.style = url, "Hyperlink"  # the named style resets the cell's style
    if alignment is not None:
        cell.alignment = alignment
    _as_text(cell)


_UNWRITABLE = re.compile(ILLEGAL_CHARACTERS_RE.pattern + "|[\ud800-\udfff]")


def _cell_value(value: object) -> object:
    if isinstance(value, str) and _UNWRITABLE.search(value):
        return _UNWRITABLE.sub(lambda m: shown(m.group()), value)
    return value


def totals_row(ws: Worksheet, values: Sequence[object], numeric: Iterable[int] = ()) -> None:
    body_row(ws, values, numeric)
    for cell in ws[ws.max_row]:
        cell.font, cell.fill = BOLD, TOTAL_FILL


def widths(ws: Worksheet, values: Sequence[float]) -> None:
    """Column widths, then row heights that fit the wrapped text (spreadsheet programs do not
    grow a row for wrapped text they did not lay out themselves: LibreOffice prints it over the
    next rows)."""
    for i, width in enumerate(values, start=1):
        ws.column_dimensions[get_column_letter(i)].width = width
    for row in ws.iter_rows(min_row=2):
        lines = max((_lines(cell, values) for cell in row), default=1)
        if lines > 1:
            ws.row_dimensions[cast(int, row[0].row)].height = LINE_HEIGHT * lines


LINE_HEIGHT = 15  # points per line of 11 pt text


def _lines(cell: Any, values: Sequence[float]) -> int:
    if cell.value is None or not (cell.alignment and cell.alignment.wrap_text):
        return 1
    width = values[cell.column - 1] if cell.column <= len(values) else 10
    per_line = max(1, int(width * 1.1))
    return sum(max(1, -(-len(part) // per_line)) for part in str(cell.value).split("\n"))


def printable(ws: Worksheet) -> None:
    """Landscape, all columns on one page width, the header repeated (printing / PDF export)."""
    ws.page_setup.orientation = "landscape"
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0
    fit = ws.sheet_properties.pageSetUpPr
    assert fit is not None  # openpyxl creates it with the sheet
    fit.fitToPage = True
    ws.print_title_rows = "1:1"
