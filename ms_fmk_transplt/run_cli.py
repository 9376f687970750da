"""The migration run of the command line (``cli.py``): runs it (or the zoo) and prints its
result; kept apart so that parsing the command line (completion, ``--help``) imports neither the
pipeline nor the reports."""

from __future__ import annotations

import json
import sys

import click

from ms_fmk_transplt import terminal
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
from ms_fmk_transplt.pipeline import run
from ms_fmk_transplt.records import RunOptions
from ms_fmk_transplt.report import summary
from ms_fmk_transplt.report.progress import Progress
from ms_fmk_transplt.safe_names import shown
from ms_fmk_transplt.zoo import HEADER, run_zoo, totals


def _interrupted(exc: KeyboardInterrupt, zoo: bool = False) -> None:
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


def execute_zoo(options: RunOptions, quiet: bool, verbose: bool, color: str = "auto") -> None:
    from rich.table import Table

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
    for i, name in enumerate(HEADER[:-1]):
        footer = f"{total[i]:.1%}" if i == rate else shown(total[i])
        table.add_column(name, footer=footer)
    for row in result.rows:
        values = list(row[:-1])
        values[rate] = f"{row[rate]:.1%}"
        table.add_row(*(shown(v) for v in values))
    console.print(table)
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
    try:
        with Progress(console, enabled=console.is_terminal and not quiet, verbose=verbose) as bar:
            result = run(options, progress=bar)
    except UserError as exc:
        fail(str(exc))
        return
    except KeyboardInterrupt as exc:
        _interrupted(exc)
    except InternalError as exc:
        click.echo(
            f"ms_fmk_transplt: internal error: {exc}; nothing was written "
            f"(traceback in {exc.log}); please report it",
            err=True,
        )
        sys.exit(EXIT_INTERNAL_ERROR)
    code = EXIT_FILE_FAILURES if result.count(FileStatus.FAILED) else EXIT_OK
    if machine_format == "json":
        click.echo(json.dumps(summary.as_json(result, code), indent=2))
    elif machine_format == "sarif":
        click.echo(json.dumps(summary.as_sarif(result), indent=2))
    else:
        summary.show(result, console)
    sys.exit(code)
