"""effort.csv and the "Effort" sheet (--analyse): what sizing the work needs, per file and per
folder — the counts of automatic / caveat / manual / advice items and an effort level.

The level of a file (documented in docs/reports.md, "Sizing the work"):
* high: work the tool cannot do at all — a manual item of a HARD category (custom CUDA code,
  a CUDA-only library, an operator the target does not support, a file that could not be
  parsed or failed) — or 5 manual items or more;
* medium: 1 to 4 other manual items, or 5 caveats or more;
* low: the rest (automatic changes, a few caveats, advice only).
A folder takes the highest level of its files and the sums of their counts.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ms_fmk_transplt.records import RunResult
from ms_fmk_transplt.report.csv_rows import write_rows
from ms_fmk_transplt.report.statistics import advice_count, count_buckets
from ms_fmk_transplt.safe_names import shown

if TYPE_CHECKING:  # (openpyxl only when a workbook is written: a re-run may reuse it)
    from openpyxl.workbook import Workbook

HARD = frozenset(
    {"custom_cuda_code", "third_party", "unsupported_op", "skipped_file", "failed_file"}
)
LEVELS = ("low", "medium", "high")
HEADER = ("Scope", "Path", "Files", "Automatic", "Caveat", "Manual", "Advice", "Effort")
CAPS = (10, 60, 8, 8, 8, 8, 8, 8)  # widest a column grows before its text wraps


@dataclass
class Counts:
    files: int = 0
    automatic: int = 0
    caveat: int = 0
    manual: int = 0
    advice: int = 0
    hard: bool = False
    level: str = "low"
    children: list[str] = field(default_factory=list)

    def judge(self) -> str:
        if self.hard or self.manual >= 5:
            return "high"
        if self.manual or self.caveat >= 5:
            return "medium"
        return "low"


def per_file(result: RunResult) -> dict[str, Counts]:
    out: dict[str, Counts] = {}
    for record in result.files:
        if not record.python:
            continue
        b = count_buckets(record.events, record.notices)
        c = Counts(files=1, automatic=b.automatic, caveat=b.caveat, manual=b.manual)
        c.advice = advice_count(record.notices)
        c.hard = any(
            n.open_work and n.action != "caveat" and n.category in HARD for n in record.notices
        )
        c.level = c.judge()
        out[record.path] = c
    return out


def per_folder(files: dict[str, Counts]) -> dict[str, Counts]:
    folders: dict[str, Counts] = defaultdict(Counts)
    for path, c in files.items():
        for parent in PurePosixPath(path).parents:
            f = folders[parent.as_posix()]
            f.files += c.files
            f.automatic += c.automatic
            f.caveat += c.caveat
            f.manual += c.manual
            f.advice += c.advice
            if LEVELS.index(c.level) > LEVELS.index(f.level):
                f.level = c.level
    return dict(sorted(folders.items()))


def rows(result: RunResult) -> list[tuple[str, str, int, int, int, int, int, str]]:
    files = per_file(result)
    out = []
    for scope, table in (("folder", per_folder(files)), ("file", files)):
        for path, c in sorted(table.items()):
            name = "(project)" if path == "." else shown(path)
            out.append((scope, name, c.files, c.automatic, c.caveat, c.manual, c.advice, c.level))
    return out


def write_csv(path: Path, result: RunResult) -> None:
    write_rows(path, HEADER, rows(result))


def add_sheet(wb: Workbook, result: RunResult) -> None:
    from openpyxl.utils import get_column_letter

    from ms_fmk_transplt.report import sheet_style as style

    ws = wb.create_sheet("Effort")
    numeric = (3, 4, 5, 6, 7)
    style.header(ws, HEADER, numeric)
    data = rows(result)
    for row in data:
        style.body_row(ws, row, numeric)
    style.widths(ws, CAPS, whole=(2,))
    ws.freeze_panes = "A2"
    ws.auto_filter.ref = f"A1:{get_column_letter(len(HEADER))}{max(1, len(data) + 1)}"
    style.printable(ws)
