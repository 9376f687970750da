"""Writing a CSV report: a header row, then the rows (UTF-8, the csv module's line endings; the
same bytes for change_list.csv, unsupported_op.csv, advice.csv, effort.csv and the zoo summary).

Every text cell is written through ``inert``: a cell that a spreadsheet program would take for a
formula (OWASP "CSV injection": it starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return) gets a leading single quote, so a file named ``=HYPERLINK(...).py`` or a line of the
user's ``run.sh`` is shown as text. Numbers are written as numbers (never quoted)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from pathlib import Path

from ms_fmk_transplt.safety.fs_safety import write_text

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def inert(value: object) -> object:
    """``value``, with a single quote in front when it is text a spreadsheet would evaluate."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def plain(cell: str) -> str:
    """The text ``inert`` was given, for a program reading a CSV report back (a cell written as
    ``'-x.py`` is the file ``-x.py``)."""
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(FORMULA_STARTS) else cell


def write_rows(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow([inert(v) for v in header])
    writer.writerows([inert(v) for v in row] for row in rows)
    write_text(path, text.getvalue())
