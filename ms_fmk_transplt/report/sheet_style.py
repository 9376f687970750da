"""How every workbook sheet looks: a bold shaded header, numbers right-aligned under
right-aligned headers, long text wrapped at the top of its cell, a totals row, landscape pages
one sheet wide. Shared by unsupported_op.xlsx (all its sheets) and the zoo summary.

Every row goes through ``_append``, so no cell is ever a formula: openpyxl stores any string
starting with ``=`` as one, and a file or model named ``=HYPERLINK(...)`` would become a live
formula. Text that starts like a formula (``=``, ``+``, ``-``, ``@``, a tab, a carriage return:
``csv_rows.FORMULA_STARTS``) is stored as a text cell with Excel's quote prefix (shown verbatim,
and still text when the user edits it)."""

from __future__ import annotations

import functools
import re
import textwrap
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any, cast

from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.page import PageMargins
from openpyxl.worksheet.worksheet import Worksheet

from ms_fmk_transplt.report.csv_rows import FORMULA_STARTS
from ms_fmk_transplt.safe_names import shown

FONT = "Calibri"  # the workbook's default font: its header and totals in the same face
BOLD = Font(name=FONT, size=11, bold=True)
FILL = PatternFill("solid", fgColor="DDEBF7")
TOTAL_FILL = PatternFill("solid", fgColor="F2F2F2")
WRAP = Alignment(wrap_text=True, vertical="top")
NUMBER = Alignment(horizontal="right", vertical="top", indent=1)  # kept off the next column
# A rate: a trailing space's width after the % keeps it off the next column (LibreOffice ignores
# the indent of a percentage)
PERCENT = "0.0%_)"


def header(ws: Worksheet, values: Sequence[str], numeric: Iterable[int] = ()) -> None:
    """The header row; ``numeric``: 1-based columns holding numbers (right-aligned)."""
    numeric = set(numeric)
    for i, cell in enumerate(_append(ws, values), start=1):
        cell.font, cell.fill = BOLD, FILL
        cell.alignment = NUMBER if i in numeric else Alignment(vertical="top", wrap_text=True)


def body_row(
    ws: Worksheet, values: Sequence[object], numeric: Iterable[int] = ()
) -> tuple[Any, ...]:
    """A data row: numbers (of the ``numeric`` columns) right-aligned, text wrapped; returns its
    cells."""
    numeric = set(numeric)
    cells = _append(ws, values)
    for i, cell in enumerate(cells, start=1):
        number = isinstance(cell.value, (int, float)) and not isinstance(cell.value, bool)
        cell.alignment = NUMBER if i in numeric and number else WRAP
    return cells


def _append(ws: Worksheet, values: Sequence[object]) -> tuple[Any, ...]:
    """Appends a row and returns its cells: characters a workbook cannot hold (control
    characters, undecodable bytes of a file name) escaped, text that starts like a formula kept
    as text. (The row is the one ``append`` wrote: openpyxl's max_row scans every cell of the
    sheet, which made writing a sheet quadratic in its rows.)"""
    ws.append([_cell_value(v) for v in values])
    row = cast(int, getattr(ws, "_current_row"))  # noqa: B009 (private: the row append wrote)
    cells: tuple[Any, ...] = ws[row]
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
    for cell in body_row(ws, values, numeric):
        cell.font, cell.fill = BOLD, TOTAL_FILL


def widths(ws: Worksheet, caps: Sequence[float], whole: Iterable[int] = ()) -> None:
    """Column widths from the content: each column as wide as its longest line, at most its cap
    in ``caps`` (a longer text wraps, a long word broken), at least its header with room for the
    filter button. The ``whole`` columns (1-based: file paths, API names, rule ids, links, which
    must read whole and which LibreOffice never wraps in a link) grow past their cap to their
    longest line, up to ``WHOLE_CAP``. Then row heights that fit the wrapped text (spreadsheet
    programs do not grow a row for wrapped text they did not lay out themselves: LibreOffice
    prints it over the next rows)."""
    sizes = [float(MIN_WIDTH)] * len(caps)
    keep = {i - 1 for i in whole}
    for row_index, row in enumerate(ws.iter_rows(max_col=len(caps)), start=1):
        for i, cell in enumerate(row):
            longest = _longest_line(cell)
            if row_index == 1:  # a header is never cut
                sizes[i] = max(sizes[i], longest + HEADER_PAD)
            else:
                cap = WHOLE_CAP if i in keep else float(caps[i])
                sizes[i] = max(sizes[i], min(cap, longest + PAD))
    for i, width in enumerate(sizes, start=1):
        ws.column_dimensions[get_column_letter(i)].width = width
    for row in ws.iter_rows(min_row=1):
        lines = max((_lines(cell, sizes) for cell in row), default=1)
        if lines > 1:
            ws.row_dimensions[cast(int, row[0].row)].height = LINE_HEIGHT * lines


MIN_WIDTH = 6
WHOLE_CAP = 80  # a longer path or name in a ``whole`` column wraps (a link's is cut)
PAD = 2  # characters of room beside a cell's text (and a right-aligned number's indent)
HEADER_PAD = 4  # and for the filter button of a header cell
LINE_HEIGHT = 15  # points per line of 11 pt text
# Text characters per unit of column width (the width of a digit): most letters are narrower
# than a digit; kept low, as a row too tall only wastes paper and one too short cuts its text.
CHARACTERS_PER_WIDTH = 1.2


def text_width(text: str) -> int:
    """Width in character cells: East Asian wide characters take two."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _shown_text(cell: Any) -> str:
    if cell.value is None:
        return ""
    if isinstance(cell.value, (int, float)) and cell.number_format == PERCENT:
        return f"{cell.value:.1%}"
    return str(cell.value)


def _longest_line(cell: Any) -> int:
    return max((text_width(line) for line in _shown_text(cell).split("\n")), default=0)


def _lines(cell: Any, sizes: Sequence[float]) -> int:
    """How many lines the cell's text takes when wrapped in its column (greedy, by words; a
    word longer than the line is broken)."""
    if cell.value is None or not (cell.alignment and cell.alignment.wrap_text):
        return 1
    width = sizes[cell.column - 1] if cell.column <= len(sizes) else 10
    per_line = max(1, int((width - PAD) * CHARACTERS_PER_WIDTH))
    wrap = _wrapper(per_line)
    return sum(
        1 if len(part) <= per_line and "\t" not in part else max(1, len(wrap.wrap(part)))
        for part in _shown_text(cell).split("\n")
    )


@functools.lru_cache(maxsize=64)
def _wrapper(per_line: int) -> textwrap.TextWrapper:
    return textwrap.TextWrapper(per_line, break_on_hyphens=False)


def printable(ws: Worksheet, title_row: bool = True) -> None:
    """Landscape A4, all columns on one page width and as many pages down as needed, narrow
    margins; for a sheet of one table (``title_row``) its header row repeated on every page and
    the grid printed."""
    ws.page_setup.orientation = "landscape"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0
    fit = ws.sheet_properties.pageSetUpPr
    assert fit is not None  # openpyxl creates it with the sheet
    fit.fitToPage = True
    ws.page_margins = PageMargins(left=0.4, right=0.4, top=0.5, bottom=0.5, header=0.3, footer=0.3)
    if title_row:
        ws.print_title_rows = "1:1"
        ws.print_options.gridLines = True
