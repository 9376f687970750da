"""unsupported_op.xlsx as it prints: column widths from the content (long paths and API names
whole, long text wrapped in rows tall enough), numbers kept off the next column, landscape pages
one sheet wide with the header repeated, English tips with the documented (Chinese) wording kept
in a note, the operator-list note said once. Read back with openpyxl and, where LibreOffice is
installed, printed to PDF."""

from __future__ import annotations

import csv
import html
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from openpyxl import Workbook, load_workbook
from openpyxl.styles import Font
from required_tools import needs_tool

from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.report import sheet_style as style
from ms_fmk_transplt.report.unsupported_op import CSV_HEADER, HEADER, ORIGINAL_NOTE
from ms_fmk_transplt.tables import load_tables

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CHINESE = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")
TARGET = "2.14.0"  # a version without its own operator-support list
LONG_PATH = "distributed/tensor_parallelism/sequence_parallel_example.py"
LONG_API = "torch.distributed.tensor.parallel.PrepareModuleInput"
SOURCE = """import torch
import torch.nn.functional as F
from torch.distributed.tensor.parallel import PrepareModuleInput


def build(model, x):
    plan = PrepareModuleInput(input_layouts=None)
    y = F.interpolate(x, scale_factor=2)
    lstm = torch.nn.LSTM(4, 4, dropout=0.1)
    torch.backends.cudnn.benchmark = True
    return model.cuda(), plan, y, lstm
"""


def migrate(project: Path, out: Path) -> Path:
    result = CliRunner().invoke(main, ["-i", str(project), "-o", str(out), "-v", TARGET])
    assert result.exit_code == 0, result.output
    return out / f"{project.name}_msft"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The report folders of a project with a long path and long API names (``long``), and of
    the imagenet and npu_target fixtures."""
    project = tmp_path_factory.mktemp("src") / "long"
    (project / LONG_PATH).parent.mkdir(parents=True)
    (project / LONG_PATH).write_text(SOURCE, encoding="utf-8")
    out = tmp_path_factory.mktemp("out")
    found = {"long": migrate(project, out)}
    for name in ("imagenet", "npu_target"):
        found[name] = migrate(FIXTURES / "projects" / name, out)
    return found


def cells(ws: Any, column: int) -> list[Any]:
    """The body cells of a column (no header, no totals row)."""
    return [row[column - 1] for row in ws.iter_rows(min_row=2) if row[0].value is not None][:-1]


def width(ws: Any, column: int) -> float:
    return float(ws.column_dimensions["ABCDEFGH"[column - 1]].width)


@pytest.mark.parametrize("name", ["long", "imagenet", "npu_target"])
def test_widths_come_from_the_content(outputs: dict[str, Path], name: str) -> None:
    """Widths in digit widths (``style.text_units``): links as wide as their longest text,
    header words whole, the sheet no wider than prints at 8 pt on landscape A4."""
    ws = load_workbook(outputs[name] / "unsupported_op.xlsx")["Unsupported"]
    units = style.text_units
    for column, title in enumerate(HEADER, start=1):
        # a link's named style ("Hyperlink") is 12 pt: wider than the 11 pt the units measure
        longest = max(units(str(c.value)) * c.font.sz / 11 for c in cells(ws, column))
        assert width(ws, column) >= max(map(units, title.split())) + 2, title  # and the filter
        if title in ("File", "Rule"):  # links (LibreOffice never wraps one): whole
            assert longest < width(ws, column) <= longest + 4, title
        elif title in ("Start Line", "End Line"):
            assert width(ws, column) <= units(title) + 5, title
        else:  # text wraps past a cap, and no column is wider than its text needs
            assert width(ws, column) <= max(longest, units(title) + 2) + 4, title
            assert width(ws, column) >= min(longest, style.TEXT_FLOOR), title
    total = sum(width(ws, column) for column in range(1, len(HEADER) + 1))
    assert total <= style.PAGE_UNITS
    if name == "long":  # the long path whole, the long API name wrapped to fit the page
        assert width(ws, 1) > units(LONG_PATH) and width(ws, 4) < units(LONG_API)


def test_long_text_wraps_at_the_top_in_rows_tall_enough(outputs: dict[str, Path]) -> None:
    ws = load_workbook(outputs["imagenet"] / "unsupported_op.xlsx")["Unsupported"]
    room = width(ws, 6) - 1
    tips = [c for c in cells(ws, 6) if style.text_units(str(c.value)) > room]
    assert tips, "no tip longer than its column: nothing wraps"
    for cell in tips:
        assert cell.alignment.wrap_text and cell.alignment.vertical == "top"
        lines = style.text_units(str(cell.value)) / room
        assert ws.row_dimensions[cell.row].height >= style.LINE_HEIGHT * lines, cell.coordinate
    for cell in cells(ws, 2) + cells(ws, 3):  # line numbers: right-aligned, off the OP column
        assert cell.alignment.horizontal == "right" and cell.alignment.indent >= 1


def test_print_setup(outputs: dict[str, Path]) -> None:
    wb = load_workbook(outputs["long"] / "unsupported_op.xlsx")
    for ws in wb:
        setup = ws.page_setup
        total = sum(ws.column_dimensions[c].width for c in "ABCDEFGH"[: ws.max_column])
        upright = total <= style.PORTRAIT_UNITS  # a narrow sheet prints on portrait pages
        assert setup.orientation == ("portrait" if upright else "landscape"), ws.title
        assert upright == (ws.title == "Advice"), ws.title  # the long project's: one row
        assert (setup.fitToWidth, setup.fitToHeight) == (1, 0), ws.title
        assert ws.sheet_properties.pageSetUpPr.fitToPage, ws.title
        assert ws.page_margins.left <= 0.5 and ws.page_margins.right <= 0.5, ws.title
        assert not ws.merged_cells.ranges, ws.title
        # a sheet of one table repeats its header; the Summary's header is its first table's
        title = None if ws.title == "Summary" else "$1:$1"
        assert ws.print_title_rows == title, ws.title
        assert ws.freeze_panes == (None if ws.title == "Summary" else "A2"), ws.title


@pytest.mark.parametrize("name", ["long", "imagenet"])
def test_every_header_reads_whole(outputs: dict[str, Path], name: str) -> None:
    """Every header cell of every sheet (the Summary's second table too: its "Caveat rows"
    printed as "veat rows") fits its column on one line, or wraps between whole words in a row
    tall enough."""
    for ws in load_workbook(outputs[name] / "unsupported_op.xlsx"):
        for row in ws.iter_rows():
            for cell in (c for c in row if c.fill == style.FILL and c.value):
                room = width(ws, cell.column) - 1 - (cell.alignment.indent or 0)
                words = [style.text_units(w) for w in str(cell.value).split()]
                if style.text_units(str(cell.value)) > room:
                    assert cell.alignment.wrap_text and max(words) <= room, cell.coordinate
                    height = ws.row_dimensions[cell.row].height or 15
                    assert height >= style.LINE_HEIGHT * 2, (ws.title, cell.coordinate)


@pytest.mark.parametrize("name", ["long", "npu_target"])
def test_tips_are_english_with_the_original_kept(outputs: dict[str, Path], name: str) -> None:
    ws = load_workbook(outputs[name] / "unsupported_op.xlsx")["Unsupported"]
    tips = cells(ws, 6)
    assert not [c.value for c in tips if CHINESE.search(str(c.value))]
    noted = [c for c in tips if c.comment is not None]
    assert noted, "no operator restriction kept its documented wording"
    for cell in noted:
        assert cell.comment.text.startswith(ORIGINAL_NOTE) and CHINESE.search(cell.comment.text)
    with (outputs[name] / "unsupported_op.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    assert tuple(rows[0]) == CSV_HEADER
    assert not [r[5] for r in rows[1:] if CHINESE.search(r[5])]
    originals = [r[6] for r in rows[1:] if r[6]]
    assert len(originals) == len(noted) and all(CHINESE.search(o) for o in originals)
    assert sorted(ORIGINAL_NOTE + o for o in originals) == sorted(c.comment.text for c in noted)


def test_the_operator_list_note_is_said_once(outputs: dict[str, Path]) -> None:
    note = load_tables(TARGET).operators.note
    assert note == f"no public list for {TARGET}: the 2.13.0 list is used"
    wb = load_workbook(outputs["long"] / "unsupported_op.xlsx")
    rows = [str(v) for row in wb["Unsupported"].iter_rows(values_only=True) for v in row if v]
    assert [r for r in rows if "restricted on the NPU" in r]  # the operator rows are there
    assert not [r for r in rows if "no public list" in r]
    summary = [str(v) for row in wb["Summary"].iter_rows(values_only=True) for v in row if v]
    assert sum(note in v for v in summary) == 1
    values = {r[0]: r[1] for r in wb["Summary"].iter_rows(values_only=True) if r and r[0]}
    assert values["operator support list used"] == f"2.13.0 ({note})"
    assert values["line numbers in"] == "migrated files"  # one cell, not half a sentence each
    log = (outputs["long"] / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert log.count(note) == 1
    with (outputs["long"] / "unsupported_op.csv").open(encoding="utf-8") as fh:
        assert "no public list" not in fh.read()


SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")
PDFTOTEXT = shutil.which("pdftotext")
FC_MATCH = shutil.which("fc-match")


def carlito() -> bool:
    """Whether Calibri, the workbook's font, prints as Carlito (its metric twin) here, as on a
    desktop with LibreOffice or Excel. Without it LibreOffice falls back to the wider DejaVu Sans
    and sizes every column by DejaVu's digit: the same sheet prints smaller."""
    if FC_MATCH is None:
        return False
    found = subprocess.run([FC_MATCH, "Calibri"], capture_output=True, text=True).stdout
    return found.startswith("Carlito")


def printed(book: Path, tmp_path: Path) -> tuple[Path, float]:
    """``book`` printed by LibreOffice, and the points of font size per point of a word's box
    height (from a cell of 11 pt text printed at 100% in the same run)."""
    assert SOFFICE is not None
    calibration = Workbook()
    sheet = calibration.active
    assert sheet is not None
    sheet["A1"] = "Calibration"
    sheet["A1"].font = Font(name="Calibri", size=11)
    calibration.save(tmp_path / "calibration.xlsx")
    copy = tmp_path / book.name
    shutil.copy(book, copy)
    subprocess.run(
        [SOFFICE, "--headless", "--convert-to", "pdf", "--outdir", str(tmp_path), str(copy)]
        + [str(tmp_path / "calibration.xlsx")],
        capture_output=True,
        timeout=240,
        check=True,
    )
    (box,) = page_words(tmp_path / "calibration.pdf", 1)
    return copy.with_suffix(".pdf"), 11 / (box[3] - box[1])


def page_count(pdf: Path) -> int:
    assert PDFTOTEXT is not None
    text = subprocess.run([PDFTOTEXT, str(pdf), "-"], capture_output=True, text=True).stdout
    return text.count("\f")


PRINT_TOOLS = (
    needs_tool("soffice", SOFFICE, "LibreOffice (soffice) is needed to print the workbook"),
    needs_tool(
        "pdftotext", PDFTOTEXT, "poppler's pdftotext is needed to read the printed workbook"
    ),
    needs_tool("carlito", carlito(), "Carlito (fonts-crosextra-carlito) prints Calibri's metrics"),
)


def print_tools(test: Any) -> Any:
    for mark in PRINT_TOOLS:
        test = mark(test)
    return test


@print_tools
def test_the_printed_workbook_reads(outputs: dict[str, Path], tmp_path: Path) -> None:
    """Printed by LibreOffice: text of at least 8 pt on every page, every header word whole
    ("Caveat rows" of the Summary was cut to "veat rows"), the long path whole (a link: one
    word, ending before the next column starts), the long API name in its column."""
    pdf, points = printed(outputs["long"] / "unsupported_op.xlsx", tmp_path)
    assert PDFTOTEXT is not None
    text = subprocess.run(
        [PDFTOTEXT, "-layout", str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout
    assert "Start" in text.split("\f")[0] and "operator_support.restricted" in text
    for page in range(1, page_count(pdf) + 1):
        heights = sorted(w[3] - w[1] for w in page_words(pdf, page))
        assert heights[len(heights) // 2] * points >= 8.0, page  # points of font size
    words = set(text.split())
    book = load_workbook(outputs["long"] / "unsupported_op.xlsx")
    for ws in book:
        headers = [c for row in ws.iter_rows() for c in row if c.fill == style.FILL and c.value]
        assert headers, ws.title
        for cell in headers:
            assert set(str(cell.value).split()) <= words, (ws.title, cell.value)
    assert "Caveat rows" in text  # the Summary's header fits its column
    words_1 = page_words(pdf, 1)
    first = {w[4]: w for w in reversed(words_1)}  # each text's first occurrence
    paths = [w for w in words_1 if w[4] == LONG_PATH]
    assert len(paths) == 4 and all(w[2] < first["Start"][0] for w in paths)
    op = [w for w in words_1 if first["OP"][0] - 1 <= w[0] < first["Category"][0]]
    assert LONG_API in "".join(w[4] for w in op)  # whole, or broken across lines of its cell


@print_tools
def test_printed_rows_fit_their_text(outputs: dict[str, Path], tmp_path: Path) -> None:
    """Each row of the printed Unsupported sheet is as tall as its wrapped text, within one
    line: a row's height, from the top of its first line to the next row's, is at most one line
    more than its lines at Excel's line height (Excel sets lines of 11 pt Calibri 13.5 pt apart;
    LibreOffice sets them closer, 11 pt)."""
    pdf, points = printed(outputs["imagenet"] / "unsupported_op.xlsx", tmp_path)
    words = page_words(pdf, 1)
    left = min(w[0] for w in words)
    starts = sorted({round(w[1], 1) for w in words if abs(w[0] - left) < 1})[1:]  # no header
    tall = 0
    for top, bottom in zip(starts, starts[1:]):
        lines = len({round(w[1]) for w in words if top - 0.5 <= w[1] < bottom - 0.5})
        font = sorted(w[3] - w[1] for w in words)[len(words) // 2] * points  # printed size
        scale = font / 11
        assert bottom - top <= (13.5 * (lines + 1) + 1.5) * scale, (top, lines)
        assert bottom - top >= 0.9 * lines * font, (top, lines)  # none under the next
        tall += lines > 3
    assert tall, "no row of several lines: nothing checked"


def page_words(pdf: Path, page: int) -> list[tuple[float, float, float, float, str]]:
    """``(xMin, yMin, xMax, yMax, text)`` of each word of a page, in points."""
    assert PDFTOTEXT is not None
    page_text = str(page)
    xml = subprocess.run(
        [PDFTOTEXT, "-f", page_text, "-l", page_text, "-bbox", str(pdf), "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = re.findall(
        r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>',
        xml,
    )
    return [(float(a), float(b), float(c), float(d), html.unescape(t)) for a, b, c, d, t in found]
