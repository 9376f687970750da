"""Writing a CSV report: a header row, then the rows (UTF-8, the csv module's line endings; the
same bytes for change_list.csv, unsupported_op.csv, advice.csv, effort.csv and the zoo summary)."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path


def write_rows(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
