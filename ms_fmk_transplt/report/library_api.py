"""library_api.csv and the sheet "Library APIs" of unsupported_op.xlsx (``--analyse --library``):
the input's public APIs that reach CUDA-specific code, one row each, sorted by API, with the
path down to the line; read only from what the run recorded (``RunResult.library``), the APIs
chosen by statistics.public_apis."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from ms_fmk_transplt.engine.library_facts import CPU, CUDA, Reach
from ms_fmk_transplt.records import RunResult
from ms_fmk_transplt.report.csv_rows import write_rows
from ms_fmk_transplt.report.statistics import library_counts, public_apis

if TYPE_CHECKING:  # (openpyxl only when a workbook is written: the log and summary use this)
    from openpyxl.workbook import Workbook

NAME = "library_api.csv"
SHEET = "Library APIs"
HEADER = ("API", "Kind", "Path", "Where")
KINDS = {CUDA: "needs CUDA", CPU: "CPU path on the NPU"}  # as the deps.* rules word them
BEHIND_A_TEST = " (behind a test)"  # the path passes an `if` on an option or a setting
CAPS = (50, 20, 90, 40)  # widest a column grows before its text wraps
_WHERE = re.compile(r"(.+?\.py:\d+): ")  # the last step: "pkg/mod.py:40: x.cuda()"


def rows(result: RunResult) -> list[tuple[str, str, str, str]]:
    out = [
        _row(api, reach)
        for library in result.library
        for api, reach in public_apis(library).items()
    ]
    return sorted(out)


def _row(api: str, reach: Reach) -> tuple[str, str, str, str]:
    last = reach.path[-1] if reach.path else ""
    where = _WHERE.match(last)
    kind = KINDS[reach.kind] + (BEHIND_A_TEST if reach.conditional else "")
    return api, kind, " -> ".join(reach.path), where.group(1) if where else last


def write_csv(path: Path, result: RunResult) -> None:
    write_rows(path, HEADER, rows(result))


def add_sheet(wb: Workbook, result: RunResult) -> None:
    from openpyxl.utils import get_column_letter

    from ms_fmk_transplt.report import sheet_style as style

    ws = wb.create_sheet(SHEET)
    style.header(ws, HEADER)
    data = rows(result)
    for row in data:
        style.body_row(ws, row)
    cuda = sum(1 for r in data if r[1].startswith(KINDS[CUDA]))
    style.totals_row(
        ws, (f"Total: {len(data)} APIs", f"{cuda} need CUDA", f"{len(data) - cuda} CPU path", "")
    )
    style.widths(ws, CAPS, whole=(1, 4))
    ws.freeze_panes = "A2"
    ws.auto_filter.ref = f"A1:{get_column_letter(len(HEADER))}{max(1, len(data) + 1)}"
    style.printable(ws)


def summary_lines(result: RunResult) -> list[str]:
    """Per package of the input: how many of its public APIs reach CUDA, and where they are
    listed (none without --library)."""
    where = result.report_paths.get("library_api_csv")
    name = where.name if where is not None else NAME
    out = []
    for library in result.library:
        total, cuda, cpu = library_counts(library)
        out.append(
            f"{total} public API{'s' * (total != 1)} of {library.label()} "
            f"reach{'es' * (total == 1)} CUDA ({cuda} "
            f"need{'s' * (cuda == 1)} CUDA, {cpu} take{'s' * (cpu == 1)} the CPU path): {name}"
        )
    return out
