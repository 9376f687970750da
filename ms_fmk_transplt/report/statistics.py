"""The planning buckets every report shares: migrated automatically / with a caveat / needs
manual work, counted from recorded events and notices (a run's, or one file's)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ms_fmk_transplt.engine.spans.torch_npu_spans import TORCH_NPU
from ms_fmk_transplt.engine.todo_comments import TODO_COMMENT
from ms_fmk_transplt.events import ChangeEvent, FileStatus, Notice

NOT_COUNTED = {TORCH_NPU, TODO_COMMENT}  # bookkeeping, not CUDA constructs of the user's code


_CELL = re.compile(r"^(.*)#cell(\d+)$")


def file_order(path: str) -> tuple[str, int]:
    """Sort key of a reported file: a notebook's cells (``nb.ipynb#cell12``) in cell order."""
    match = _CELL.match(path)
    return (match.group(1), int(match.group(2)) + 1) if match else (path, 0)


@dataclass(frozen=True)
class Buckets:
    automatic: int
    caveat_changes: int  # changes whose rule carries a caveat (marked in change_list.csv)
    caveat_rows: int  # caveat rows of unsupported_op
    manual: int

    @property
    def caveat(self) -> int:
        return self.caveat_changes + self.caveat_rows

    @property
    def total(self) -> int:
        return self.automatic + self.caveat + self.manual

    @property
    def conversion_rate(self) -> float:
        """Share of the CUDA-specific items the tool migrated (with or without a caveat)."""
        return 1.0 if not self.total else (self.automatic + self.caveat) / self.total


def caveat_split(b: Buckets) -> str:
    """Where the caveats are: rows of unsupported_op, and changes (marked in change_list.csv)."""
    rows = "row" if b.caveat_rows == 1 else "rows"
    changes = "change" if b.caveat_changes == 1 else "changes"
    return f"{b.caveat_rows} {rows}, {b.caveat_changes} {changes}"


def count_buckets(events: Iterable[ChangeEvent], notices: Iterable[Notice]) -> Buckets:
    counted = [e for e in events if e.rule not in NOT_COUNTED]
    open_work = [n for n in notices if n.open_work]
    return Buckets(
        automatic=sum(1 for e in counted if not e.caveat),
        caveat_changes=sum(1 for e in counted if e.caveat),
        caveat_rows=sum(1 for n in open_work if n.action == "caveat"),
        manual=sum(1 for n in open_work if n.action != "caveat"),
    )


@dataclass(frozen=True)
class Headline:
    """The numbers a run is summed up by (terminal headline, report.html cards)."""

    python: int  # Python files scanned
    changed: int
    not_migrated: int  # failed or skipped (copied unchanged)
    advice: int  # advice rows
    buckets: Buckets


def headline_counts(files: Iterable) -> Headline:
    """From a run's file records (anything with python, status, events and notices)."""
    files = list(files)
    python = [f for f in files if f.python]
    events = [e for f in files for e in f.events]
    notices = [n for f in files for n in f.notices]
    return Headline(
        python=len(python),
        changed=sum(1 for f in python if f.status == FileStatus.CHANGED),
        not_migrated=sum(1 for f in python if f.status in (FileStatus.FAILED, FileStatus.SKIPPED)),
        advice=sum(1 for n in notices if n.advice),
        buckets=count_buckets(events, notices),
    )
