"""Progress while a run works: a rich bar on a terminal (files done / total, rate, ETA), and
with --verbose one line per Python file. Silent when not a terminal or with --quiet."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress

from ms_fmk_transplt.events import FileStatus
from ms_fmk_transplt.records import FileRecord
from ms_fmk_transplt.safe_names import shown


class Progress:
    def __init__(self, console: Console, enabled: bool, verbose: bool) -> None:
        self.console = console
        self.verbose = verbose and not console.quiet
        self.bar = (
            RichProgress(
                TextColumn("migrating"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("elapsed"),
                TimeElapsedColumn(),
                TextColumn("remaining"),
                TimeRemainingColumn(),
                console=console,
                transient=True,
            )
            if enabled
            else None
        )
        self.task: TaskID | None = None

    def __enter__(self) -> Progress:
        if self.bar is not None:
            self.bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)

    def start(self, total: int) -> None:
        if self.bar is not None:
            self.task = self.bar.add_task("files", total=total)

    def advance(self, record: FileRecord) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.advance(self.task)
        if self.verbose and record.python:
            what = {
                FileStatus.CHANGED: f"changed ({len(record.events)} changes)",
                FileStatus.UNCHANGED: "unchanged" if record.analysed else "unchanged (pre-filter)",
                FileStatus.SKIPPED: "skipped (cannot parse)",
                FileStatus.FAILED: "FAILED",
            }[record.status]
            cached = ", cached" if record.cached else ""
            self.console.print(
                f"{shown(record.path)}: {what}{cached}", highlight=False, soft_wrap=True
            )
