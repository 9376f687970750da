"""The migration run of the command line (``cli.py``): runs it (or the zoo) and prints its
result; kept apart so that parsing the command line (completion, ``--help``) imports neither the
pipeline nor the reports."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from ms_fmk_transplt.errors import (
    EXIT_FILE_FAILURES,
    EXIT_INTERNAL_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    InternalError,
    UserError,
    fail,
)
from ms_fmk_transplt.events import FileStatus
from ms_fmk_transplt.records import RunOptions, RunResult
from ms_fmk_transplt.report import summary
from ms_fmk_transplt.report.progress import Progress
from ms_fmk_transplt.run.pipeline import output_dir, run
from ms_fmk_transplt.run.staging import signals_interrupt
from ms_fmk_transplt.safe_names import shown
from ms_fmk_transplt.safety.fs_safety import discard
from ms_fmk_transplt.scan.discover import resolve_project
from ms_fmk_transplt.user_options import terminal

if TYPE_CHECKING:
    from rich.console import Console


def _interrupted(exc: KeyboardInterrupt, zoo: bool = False) -> NoReturn:
    log = getattr(exc, "log", None)
    where = f"; log: {log}" if log else ""
    what = (
        "the model in progress was not written (models finished before are complete; "
        "no zoo summary was written)"
        if zoo
        else "nothing was written (the partial output was removed)"
    )
    click.echo(f"ms_fmk_transplt: interrupted: {what}{where}", err=True)
    sys.exit(EXIT_INTERRUPTED)


NARROW_COLUMNS = {  # the narrow table's columns, with shorter headers
    "Model": "Model",
    "Changes": "Changes",
    "Needs manual work": "Manual",
    "CUDA-specific items": "Items",
    "Conversion rate": "Rate",
    "Status": "Status",
}


def _shown_row(row: Sequence[object], rate: int) -> list[object]:
    values = list(row[:-1])
    values[rate] = f"{values[rate]:.1%}"
    return values


def _width(header: tuple[str, ...], rows: list[list[str]]) -> int:
    """Terminal columns a table needs to show every cell and header whole, on one line."""
    widths = [len(name) for name in header]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row)]
    return sum(widths) + 3 * len(widths) + 1  # "│ " before each cell, " " after, "│" last


def execute_zoo(options: RunOptions, quiet: bool, verbose: bool, color: str = "auto") -> None:
    from rich.table import Table

    from ms_fmk_transplt.run.zoo import HEADER, run_zoo, totals  # (a zoo's run only)

    console = terminal.console(color, stderr=False, quiet=quiet)
    try:
        result = run_zoo(options)
    except UserError as exc:
        fail(str(exc))
        return
    except KeyboardInterrupt as exc:
        _interrupted(exc, zoo=True)
    table = Table(title=f"model zoo: {shown(result.root.name)}", show_footer=True)
    rate = HEADER.index("Conversion rate")
    total = totals(result.rows)
    # a terminal narrower than the whole table shows the columns that say what is left
    cells = [[shown(v) for v in _shown_row(row, rate)] for row in result.rows]
    foot = [shown(v) for v in _shown_row(total, rate)]
    wide = console.width >= _width(HEADER[:-1], [*cells, foot])
    columns = range(len(HEADER) - 1) if wide else [HEADER.index(n) for n in NARROW_COLUMNS]
    for i in columns:
        name = HEADER[i] if wide else NARROW_COLUMNS[HEADER[i]]
        if isinstance(total[i], (int, float)):
            table.add_column(name, footer=foot[i], justify="right")
        else:  # a model's name is folded, never cut
            table.add_column(name, footer=foot[i], overflow="fold")
    for row in cells:
        table.add_row(*(row[i] for i in columns))
    console.print(table)
    if not wide:
        console.print(
            f"(a narrow terminal: {len(columns)} of the {len(HEADER) - 1} columns; every column "
            "is in the summary files below)",
            highlight=False,
            soft_wrap=True,
        )
    console.print(
        f"zoo summary: {shown(result.summary_csv)}, {shown(result.summary_xlsx)}, "
        f"{shown(result.index_html)}",
        highlight=False,
        soft_wrap=True,
    )
    sys.exit(EXIT_FILE_FAILURES if result.failed else EXIT_OK)


def execute(
    options: RunOptions,
    quiet: bool,
    verbose: bool = False,
    machine_format: str = "",
    color: str = "auto",
) -> None:
    """Run the migration; ``machine_format`` "json" / "sarif" prints that instead of the
    terminal summary."""
    console = terminal.console(color, stderr=False, quiet=quiet or bool(machine_format))
    result = _run(options, console, quiet, verbose)
    code = EXIT_FILE_FAILURES if result.count(FileStatus.FAILED) else EXIT_OK
    if machine_format == "json":
        click.echo(json.dumps(summary.as_json(result, code), indent=2))
    elif machine_format == "sarif":
        click.echo(json.dumps(summary.as_sarif(result), indent=2))
    else:
        summary.show(result, console)
    sys.exit(code)


def execute_kit(sides: Sequence[RunOptions], quiet: bool, verbose: bool, color: str) -> None:
    """A kit: one run per tree (the precision kit's GPU side first), each summed up, then where
    its README is. A kit that stops (Ctrl-C, SIGTERM, an error of a later side) leaves nothing:
    the trees its sides wrote are removed, never one that was there before it and left alone."""
    console = terminal.console(color, stderr=False, quiet=quiet)
    code = EXIT_OK
    trees = [output_dir(resolve_project(o.input), o) for o in sides]  # (checked by kit_cli)
    before = {tree: _identity(tree) for tree in trees}
    try:
        with signals_interrupt():  # SIGTERM between two sides too
            for options in sides:
                result = _run(options, console, quiet, verbose)
                if result.count(FileStatus.FAILED):
                    code = EXIT_FILE_FAILURES
                _show_side(options, result, console)
    except KeyboardInterrupt as exc:  # between two sides
        _remove_written(before)
        _interrupted(exc)
    except SystemExit as exc:  # a side stopped, and said so in one line
        if exc.code != EXIT_OK:
            _remove_written(before)
        raise
    sys.exit(code)


def _show_side(options: RunOptions, result: RunResult, console: Console) -> None:
    if options.kit_gpu_side:  # the project as written: nothing migrated to sum up
        where = shown(result.output_dir)
        side = "the GPU side" if options.kit == "precision" else "the project as written"
        console.print(f"kit {options.kit}: {side}, with the kit's calls: {where}")
        if options.kit == "precision":
            return
        readme = result.report_paths.get("kit_readme")
        console.print(f"kit {options.kit}: what to run next: {shown(readme)}", highlight=False)
        return
    summary.show(result, console)
    readme = result.report_paths.get("kit_readme")
    console.print(f"kit {options.kit}: what to run next: {shown(readme)}", highlight=False)


def _identity(path: Path) -> tuple[int, int] | None:
    """What is at ``path`` (device and inode; None: nothing)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _remove_written(before: dict[Path, tuple[int, int] | None]) -> None:
    """The trees written by this kit: each that is not what was there before it."""
    for tree, identity in before.items():
        now = _identity(tree)
        if now is not None and now != identity:
            try:
                discard(tree)
            except OSError:
                pass  # the one line of the stop is printed; nothing more can be done


def _run(options: RunOptions, console: Console, quiet: bool, verbose: bool) -> RunResult:
    """One run with its progress bar; a user error, an interruption or an internal error ends
    the process with its exit code and one line."""
    try:
        with Progress(console, enabled=console.is_terminal and not quiet, verbose=verbose) as bar:
            result = run(options, progress=bar)
        # the headline's time: up to now, its reports written (the log's ends before they are)
        return dataclasses.replace(result, finished=datetime.now())
    except UserError as exc:
        fail(str(exc))
    except KeyboardInterrupt as exc:
        _interrupted(exc)
    except InternalError as exc:
        click.echo(
            f"ms_fmk_transplt: internal error: {exc}; nothing was written "
            f"(traceback in {exc.log}); please report it",
            err=True,
        )
        sys.exit(EXIT_INTERNAL_ERROR)
