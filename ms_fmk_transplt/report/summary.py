"""The end-of-run summary shown on the terminal (rich)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from ms_fmk_transplt.events import Severity
from ms_fmk_transplt.report.log import rule_counts, summary_counts

if TYPE_CHECKING:
    from ms_fmk_transplt.pipeline import RunResult


def show(result: RunResult, console: Console) -> None:
    table = Table(title=f"ms_fmk_transplt: {result.project.name}", show_header=True)
    table.add_column("What")
    table.add_column("Count", justify="right")
    for key, value in summary_counts(result).items():
        table.add_row(key, str(value))
    for rule, n in rule_counts(result):
        table.add_row(f"  {rule}", str(n))
    console.print(table)
    for notice in result.notices:
        if notice.severity != Severity.INFO:
            console.print(
                f"[yellow]{notice.severity.value}[/] {notice.file}:{notice.line}: "
                f"{notice.message.splitlines()[0]}",
                highlight=False,
                soft_wrap=True,
            )
    for severity, message in result.notes:
        console.print(f"[yellow]{severity.value}[/] {message}", highlight=False, soft_wrap=True)
    console.print(f"output: {result.output_dir}", highlight=False, soft_wrap=True)
    for name, path in result.report_paths.items():
        console.print(f"{name}: {path}", highlight=False, soft_wrap=True)
