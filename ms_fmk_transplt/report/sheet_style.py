"""How every workbook sheet looks: a bold shaded header, numbers right-aligned under
right-aligned headers, long text wrapped at the top of its cell, a totals row, landscape pages
one sheet wide. Shared by unsupported_op.xlsx (all its sheets) and the zoo summary.

Every row goes through ``_append``, so no cell is ever a formula: openpyxl stores any string
starting with ``=`` as one, and a file or model named ``=HYPERLINK(...)`` would become a live
formula. Text that starts like a formula (``=``, ``+``, ``-``, ``@``, a tab, a carriage return:
``csv_rows.FORMULA_STARTS``) is stored as a text cell with Excel's quote prefix (shown verbatim,
and still text when the user edits it)."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any, cast

from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.page import PageMargins
from openpyxl.worksheet.worksheet import Worksheet

from ms_fmk_transplt.report.csv_rows import FORMULA_STARTS
from ms_fmk_transplt.safe_names import shown

FONT = "Calibri"  # the workbook's default font: its header and totals in the same face
BASE_SIZE = 11.0  # points: the workbook's text, what the widths are measured in
BOLD = Font(name=FONT, size=BASE_SIZE, bold=True)
FILL = PatternFill("solid", fgColor="DDEBF7")
TOTAL_FILL = PatternFill("solid", fgColor="F2F2F2")
WRAP = Alignment(wrap_text=True, vertical="top")
NUMBER = Alignment(horizontal="right", vertical="top", indent=1)  # kept off the next column
# A header over numbers: right-aligned too, wrapped between its words on a narrow page
NUMBER_HEADER = Alignment(horizontal="right", vertical="top", indent=1, wrap_text=True)
# A rate: a trailing space's width after the % keeps it off the next column (LibreOffice ignores
# the indent of a percentage)
PERCENT = "0.0%_)"


def header(ws: Worksheet, values: Sequence[str], numeric: Iterable[int] = ()) -> None:
    """The header row; ``numeric``: 1-based columns holding numbers (right-aligned)."""
    numeric = set(numeric)
    for i, cell in enumerate(_append(ws, values), start=1):
        cell.font, cell.fill = BOLD, FILL
        cell.alignment = (
            NUMBER_HEADER if i in numeric else Alignment(vertical="top", wrap_text=True)
        )


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
    """Column widths from the content, then row heights that fit the wrapped text.

    Each column is as wide as its longest line, at most its cap in ``caps`` (a longer text
    wraps), at least its header. The ``whole`` columns (1-based: file paths, API names, rule
    ids) grow past their cap to their longest word, up to ``WHOLE_CAP`` (their prose still
    wraps). A sheet wider than ``PAGE_UNITS`` would print below 8 pt on landscape A4 one sheet
    wide: its wrapping columns give up width (down to their longest word, a header's longest
    word, ``TEXT_FLOOR`` for prose) until it fits. Links keep their width: LibreOffice never
    wraps a link, it cuts it. Row heights come from the wrapped text (spreadsheet programs do
    not grow a row for wrapped text they did not lay out themselves: LibreOffice prints it over
    the next rows)."""
    columns = [_Column() for _ in caps]
    keep = {i - 1 for i in whole}
    for row in ws.iter_rows(max_col=len(caps)):
        for i, cell in enumerate(row):
            if cell.value is not None:
                columns[i].add(cell, float(caps[i]), i in keep)
    sizes = _fit(columns, PAGE_UNITS)
    for i, width in enumerate(sizes, start=1):
        ws.column_dimensions[get_column_letter(i)].width = width
    for row in ws.iter_rows(min_row=1):
        lines = max((_lines(cell, sizes) for cell in row), default=1)
        if lines > 1:
            ws.row_dimensions[cast(int, row[0].row)].height = LINE_HEIGHT * lines + ROW_PAD


MIN_WIDTH = 6.0
WHOLE_CAP = 80  # a longer path or name in a ``whole`` column wraps (a link's is cut)
PAD = 2  # digit widths of room beside a cell's text (and a right-aligned number's indent)
HEADER_PAD = 4  # and for the filter button of a header cell
# Points per line of wrapped 11 pt Calibri as Excel sets them (18 px at 96 dpi), and the row's
# padding: a single line is Excel's default 15 pt row. (LibreOffice sets Carlito's lines at 11 pt:
# a tall row keeps a fifth of blank space there; a row too short would cut the text in Excel.)
LINE_HEIGHT = 13.5
ROW_PAD = 1.5
CELL_MARGIN = 1.0  # digit widths of a column that hold no text (the cell's inner margins)
TEXT_FLOOR = 16  # the narrowest a column of wrapped prose becomes to fit the page
WORD_CAP = 24  # a longer word (an API name) is broken rather than kept whole on a narrow page
# The widest sheet that prints at >= 8 pt (11 pt text scaled to 8/11) on landscape A4 one sheet
# wide: 784 pt between the 0.4 in margins over 5.5 pt per width unit (a digit of Calibri 11 and
# its metric twin Carlito) at 8/11 is 196 units, less room for the grid lines and rounding.
PAGE_UNITS = 185
PORTRAIT_UNITS = 125  # the same on a portrait page (538 pt): a narrower sheet prints upright
# Each printable ASCII character's width in digit widths (the unit of a column's width), in
# twentieths rounded up: Calibri's, through its metric twin Carlito. LibreOffice's fallback where
# neither is installed, DejaVu Sans, is wider, but so is its digit, and a column's unit with it:
# relative to their digits the fonts agree within a few percent over a line of text.
_ASCII_WIDTHS = (
    9, 13, 16, 20, 20, 29, 27, 9, 12, 12, 20, 20, 10, 13, 10, 16, 20, 20, 20, 20, 20, 20, 20, 20,
    20, 20, 11, 11, 20, 20, 20, 19, 36, 23, 22, 22, 25, 20, 19, 25, 25, 10, 13, 21, 17, 34, 26, 27,
    21, 27, 22, 19, 20, 26, 23, 36, 21, 20, 19, 13, 16, 13, 20, 20, 12, 19, 21, 17, 21, 20, 13, 19,
    21, 10, 10, 18, 10, 32, 21, 21, 21, 21, 14, 16, 14, 21, 18, 29, 18, 18, 16, 13, 19, 13, 20,
)  # fmt: skip
# The pieces a line breaks between: a word with its spaces, a path part with its slash
# (LibreOffice breaks after a "/").
_PIECES = re.compile(r"[^ /]*/+ *|[^ /]+ *| +")


class _Column:
    """What a column's cells ask for: ``natural`` (each text on as few lines as its cap allows)
    and ``floor`` (the narrowest it may become); ``prose``: it holds wrapped text."""

    def __init__(self) -> None:
        self.natural, self.floor, self.prose = MIN_WIDTH, MIN_WIDTH, False
        self.text = 0.0  # the width of the wrapped text it holds, all rows

    def add(self, cell: Any, cap: float, whole: bool) -> None:
        """A cell's text, wrapped past ``cap``; a ``whole`` column's words (names) up to
        ``WHOLE_CAP`` on one line."""
        text, size = _shown_text(cell), _size(cell)
        longest = size * max(text_units(line) for line in text.split("\n"))
        word = size * max((text_units(w) for w in text.split()), default=0.0)
        if cell.fill == FILL:  # a header: whole, or wrapped between its words
            self.natural = max(self.natural, longest + HEADER_PAD)
            self.floor = max(self.floor, word + HEADER_PAD)
        elif cell.hyperlink is not None or not (cell.alignment and cell.alignment.wrap_text):
            self.natural = max(self.natural, min(WHOLE_CAP, longest + PAD))  # links, numbers
            self.floor = max(self.floor, min(WHOLE_CAP, longest + PAD))
        else:
            self.natural = max(self.natural, min(cap, longest + PAD))
            if whole:
                self.natural = max(self.natural, min(WHOLE_CAP, word + PAD))
            self.floor = max(self.floor, min(WORD_CAP, word + PAD))
            self.prose = self.prose or longest + PAD > TEXT_FLOOR
            self.text += size * text_units(text)

    def narrowest(self) -> float:
        return min(self.natural, max(self.floor, TEXT_FLOOR if self.prose else 0.0))


def _fit(columns: Sequence[_Column], budget: float) -> list[float]:
    """The widths: natural ones when they fit in ``budget``, otherwise each column between its
    narrowest and its natural width, the room above the narrowest shared in proportion to the
    text a column wraps (a row is as tall as its most wrapped cell: the column with the most
    text gets the most room), a column given its natural width handing the rest on."""
    natural = [c.natural for c in columns]
    if sum(natural) <= budget:
        return [math.floor(w * 10) / 10 for w in natural]
    sizes = [c.narrowest() for c in columns]
    open_ = {i for i, c in enumerate(columns) if sizes[i] < c.natural}
    while open_ and sum(sizes) < budget:
        room = budget - sum(sizes)
        weights = {i: columns[i].text for i in open_}
        if not any(weights.values()):
            weights = dict.fromkeys(open_, 1.0)
        total = sum(weights.values())
        full = {i for i in open_ if sizes[i] + room * weights[i] / total >= columns[i].natural}
        if not full:
            for i in open_:
                sizes[i] += room * weights[i] / total
            break
        for i in full:  # as wide as it asks: its share beyond that goes to the others
            sizes[i] = columns[i].natural
        open_ -= full
    return [math.floor(w * 10) / 10 for w in sizes]


@lru_cache(maxsize=2**16)
def text_units(text: str) -> float:
    """Width in digit widths: East Asian wide characters take two, other non-ASCII ones 1.2.
    (Cached: a workbook measures the same paths, ids and words again and again, each cell
    once for its column's width and once for its row's height.)"""
    total = 0
    for char in text:
        code = ord(char)
        if 32 <= code < 127:
            total += _ASCII_WIDTHS[code - 32]
        else:
            total += 40 if unicodedata.east_asian_width(char) in "WF" else 24
    return total / 20


def _shown_text(cell: Any) -> str:
    if cell.value is None:
        return ""
    if isinstance(cell.value, (int, float)) and cell.number_format == PERCENT:
        return f"{cell.value:.1%}"
    return str(cell.value)


def _size(cell: Any) -> float:
    """The cell's font size over the 11 pt the widths are measured in (a link's named style,
    "Hyperlink", is 12 pt)."""
    size = cell.font.sz if cell.font is not None else None
    return float(size) / BASE_SIZE if size else 1.0


def _lines(cell: Any, sizes: Sequence[float]) -> int:
    """How many lines the cell's text takes when wrapped in its column."""
    if cell.value is None or not (cell.alignment and cell.alignment.wrap_text):
        return 1
    width = sizes[cell.column - 1] if cell.column <= len(sizes) else 10
    room = max(1.0, width - CELL_MARGIN - (cell.alignment.indent or 0)) / _size(cell)
    return sum(_wrapped(part, room) for part in _shown_text(cell).split("\n"))


def _wrapped(line: str, room: float) -> int:
    """Lines of ``line`` wrapped greedily in ``room`` digit widths; a piece longer than a line
    is broken anywhere."""
    count, used = 1, 0.0
    for piece in _PIECES.findall(line):
        full = text_units(piece)
        ink = text_units(piece.rstrip(" "))  # trailing spaces may hang past the edge
        if used and used + ink > room:
            count, used = count + 1, 0.0
        if ink > room:  # broken: whole lines of it, the rest starts the next
            broken = math.ceil(ink / room) - 1
            count, used = count + broken, ink - broken * room + (full - ink)
        else:
            used += full
    return count


def printable(ws: Worksheet, title_row: bool = True) -> None:
    """A4, upright when the sheet's columns fit a portrait page at >= 8 pt (``PORTRAIT_UNITS``),
    landscape otherwise; all columns on one page width and as many pages down as needed, narrow
    margins; for a sheet of one table (``title_row``) its header row repeated on every page and
    the grid printed."""
    total = sum(
        ws.column_dimensions[get_column_letter(i)].width or DEFAULT_WIDTH
        for i in range(1, ws.max_column + 1)
    )
    ws.page_setup.orientation = "portrait" if total <= PORTRAIT_UNITS else "landscape"
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


DEFAULT_WIDTH = 8.43  # a column no width was given
