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
from openpyxl import load_workbook
from required_tools import needs_tool

from ms_fmk_transplt.commands.cli import main
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
    ws = load_workbook(outputs[name] / "unsupported_op.xlsx")["Unsupported"]
    for column, title in enumerate(HEADER, start=1):
        values = [str(c.value) for c in cells(ws, column)]
        longest = max(map(len, values))
        assert width(ws, column) >= len(title) + 2, title  # headers whole, with the filter
        if title in ("File", "OP", "Rule"):  # names read whole: as wide as the longest
            assert longest < width(ws, column) <= longest + 4, title
        elif title in ("Start Line", "End Line"):
            assert width(ws, column) <= len(title) + 5, title
        else:  # text wraps past a cap, and no column is wider than its text needs
            assert width(ws, column) <= max(longest, len(title) + 2) + 4, title
            assert width(ws, column) >= min(longest, 40), title
    if name == "long":
        assert width(ws, 1) > len(LONG_PATH) and width(ws, 4) > len(LONG_API)


def test_long_text_wraps_at_the_top_in_rows_tall_enough(outputs: dict[str, Path]) -> None:
    ws = load_workbook(outputs["imagenet"] / "unsupported_op.xlsx")["Unsupported"]
    tips = [c for c in cells(ws, 6) if len(str(c.value)) > width(ws, 6) * 1.3]
    assert tips, "no tip longer than its column: nothing wraps"
    for cell in tips:
        assert cell.alignment.wrap_text and cell.alignment.vertical == "top"
        lines = len(str(cell.value)) / (width(ws, 6) * 1.3)
        assert ws.row_dimensions[cell.row].height >= 15 * lines, cell.coordinate
    for cell in cells(ws, 2) + cells(ws, 3):  # line numbers: right-aligned, off the OP column
        assert cell.alignment.horizontal == "right" and cell.alignment.indent >= 1


def test_print_setup(outputs: dict[str, Path]) -> None:
    wb = load_workbook(outputs["long"] / "unsupported_op.xlsx")
    for ws in wb:
        setup = ws.page_setup
        assert setup.orientation == "landscape", ws.title
        assert (setup.fitToWidth, setup.fitToHeight) == (1, 0), ws.title
        assert ws.sheet_properties.pageSetUpPr.fitToPage, ws.title
        assert ws.page_margins.left <= 0.5 and ws.page_margins.right <= 0.5, ws.title
        assert not ws.merged_cells.ranges, ws.title
        # a sheet of one table repeats its header; the Summary's header is its first table's
        title = None if ws.title == "Summary" else "$1:$1"
        assert ws.print_title_rows == title, ws.title
        assert ws.freeze_panes == (None if ws.title == "Summary" else "A2"), ws.title


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


@needs_tool("soffice", SOFFICE, "LibreOffice (soffice) is needed to print the workbook")
@needs_tool("pdftotext", PDFTOTEXT, "poppler's pdftotext is needed to read the printed workbook")
def test_the_printed_workbook_reads(outputs: dict[str, Path], tmp_path: Path) -> None:
    """Printed by LibreOffice: the long path and API name whole (one word each, ending before
    the next column starts), page 1's text no smaller than 6 pt, three sheets on 3 to 5 pages."""
    book = tmp_path / "unsupported_op.xlsx"
    shutil.copy(outputs["long"] / "unsupported_op.xlsx", book)
    assert SOFFICE is not None and PDFTOTEXT is not None
    subprocess.run(
        [SOFFICE, "--headless", "--convert-to", "pdf", "--outdir", str(tmp_path), str(book)],
        capture_output=True,
        timeout=240,
        check=True,
    )
    pdf = tmp_path / "unsupported_op.pdf"
    text = subprocess.run(
        [PDFTOTEXT, "-layout", str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout
    pages = text.split("\f")
    assert 3 <= len([p for p in pages if p.strip()]) <= 5  # Unsupported, Summary, Advice
    assert "Start Line" in pages[0] and "operator_support.restricted" in pages[0]
    words = page_words(pdf, 1)
    first = {w[4]: w for w in reversed(words)}  # each text's first occurrence
    paths = [w for w in words if w[4] == LONG_PATH]
    apis = [w for w in words if w[4] == LONG_API]
    assert len(paths) == 4 and len(apis) == 1  # whole: one word each, not broken in two
    assert all(w[2] < first["Start"][0] for w in paths)  # ends before the next column
    assert all(w[2] < first["Category"][0] for w in apis)
    heights = sorted(w[3] - w[1] for w in words)
    assert heights[len(heights) // 2] >= 6.0  # points: the page is not shrunk unreadable


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
