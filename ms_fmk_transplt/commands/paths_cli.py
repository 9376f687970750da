"""Everyday use on a list of files: ``--check`` (CI), ``--diff`` (dry run) and ``--inplace``
(pre-commit fix, or migrating inside your own checkout).

    ms_fmk_transplt --check [PATHS]...    exit 1 when a file would change or has open work
    ms_fmk_transplt --diff [PATHS]...     print the unified diff, write nothing; exit 1 if any
                                          file would change (as ruff --diff)
    ms_fmk_transplt --inplace [PATHS]...  rewrite the files in place (atomically); --fix too;
                                          list what is left and exit 1 if --check would
                                          fail on it (as ruff --fix)

PATHS are files or folders (their .py/.ipynb files, skipping hidden folders); none is fine.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from ms_fmk_transplt import __version__
from ms_fmk_transplt.catalogue.rule_pages import summary
from ms_fmk_transplt.commands import inplace_write
from ms_fmk_transplt.commands.config_file import configured
from ms_fmk_transplt.commands.diff_output import print_diff
from ms_fmk_transplt.commands.help_format import CONTEXT, Command
from ms_fmk_transplt.commands.run_options import run_options
from ms_fmk_transplt.engine import EngineOptions
from ms_fmk_transplt.errors import EXIT_BAD_INPUT, EXIT_FILE_FAILURES, EXIT_OK, UserError, fail
from ms_fmk_transplt.events import FileResult, FileStatus
from ms_fmk_transplt.report import findings as report
from ms_fmk_transplt.report.findings import Finding
from ms_fmk_transplt.run.engine_options import engine_options
from ms_fmk_transplt.run.file_migration import migrate_file
from ms_fmk_transplt.safe_names import shown
from ms_fmk_transplt.safety.regular_files import read_regular, special_kind
from ms_fmk_transplt.scan.discover import MAX_DEPTH, walk
from ms_fmk_transplt.tables import Tables, load_tables
from ms_fmk_transplt.user_options import terminal
from ms_fmk_transplt.user_options.option_schema import PATHS, options_of
from ms_fmk_transplt.user_options.terminal import LazyConsole

FAILING = {
    "change": {"change"},
    "manual": {"change", "manual"},
    "caveat": {"change", "manual", "caveat"},
}
COLOURS = {"change": "red", "manual": "red", "caveat": "yellow", "advice": "blue", "note": "white"}
CODE_SUFFIXES = (".py", ".ipynb")


def _too_deep(folder: Path) -> None:
    click.echo(
        f"ms_fmk_transplt: notice: {shown(folder)}: a folder nested more than {MAX_DEPTH} levels "
        "deep: skipped",
        err=True,
    )


def collect(paths: tuple[str, ...], write: bool = False) -> list[Path]:
    """The files to process, all checked before any is touched: readable, and (``write``)
    in a folder where the atomic replacement can be made. FIFOs, sockets and devices are never
    opened: each is a one-line notice on stderr, and the others are processed."""
    files: list[Path] = []

    def unreadable(err: OSError) -> None:
        raise UserError(err.filename, f"cannot read this folder ({err.strerror})")

    for given in paths:
        path = Path(given)
        if path.is_dir():
            for root, dirs, names in walk(path, unreadable, _too_deep):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
                files += [Path(root) / n for n in sorted(names) if n.endswith(CODE_SUFFIXES)]
        elif path.is_file() or special_kind(path) is not None:
            files.append(path)
        else:
            raise UserError(given, "no such file or folder")
    files = [file for file in files if _regular(file)]
    for file in files:
        if not os.access(file, os.R_OK):
            raise UserError(file, "cannot read this file (Permission denied)")
        folder = file.parent
        if write and not os.access(folder, os.W_OK | os.X_OK):
            raise UserError(folder, "folder is not writable (--inplace replaces files through it)")
    return files


def _regular(file: Path) -> bool:
    kind = special_kind(file)
    if kind is not None:
        click.echo(
            f"ms_fmk_transplt: notice: {shown(file)}: {kind}, not a regular file: skipped",
            err=True,
        )
    return kind is None


@dataclass
class Checked:
    """One file's outcome in a path mode."""

    path: Path
    before: bytes
    output: bytes
    status: FileStatus
    findings: list[report.Finding] = field(default_factory=list)
    not_written: str = ""  # --inplace: why this file, which would change, was left as it is
    # --inplace: the findings of the file as it now is (output lines once rewritten), and of
    # those the ones --fail-on counts (what is left to do, listed as ruff --fix lists them)
    now: list[report.Finding] = field(default_factory=list)
    remaining: list[report.Finding] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.output != self.before


@click.command(cls=Command, context_settings=CONTEXT)
@options_of(PATHS)
@configured(PATHS, lambda params: (params["paths"] or (".",))[0])
def paths_main(
    mode: str,
    paths: tuple[str, ...],
    fail_on: str,
    statistics: bool,
    output_format: str,
    quiet: bool,
    color: str,
    **values: Any,
) -> None:
    """Check, diff or migrate in place a list of files (pre-commit, CI, your own checkout)."""
    try:
        run = run_options(values, input=".", output=".")
        tables = load_tables(run.target_version)  # once for every file, handed down
        options = engine_options(run, tables)
        if mode != "inplace":  # --check/--diff name the lines of the files as given: so do the
            options = dataclasses.replace(options, input_lines=True)  # lists of folded rows
        files = collect(paths, write=mode == "inplace")
    except UserError as exc:
        fail(str(exc))
    console = terminal.LazyConsole(color, highlight=False, soft_wrap=True, markup=False)
    try:
        with inplace_write.stopped_by_signals(mode):
            checked = [
                _one(path, options, tables, mode, output_format, quiet, console) for path in files
            ]
    except UserError as exc:  # e.g. a file replaced by a FIFO after it was listed
        fail(str(exc))
    failing = [f for c in checked for f in c.findings if f.kind in FAILING[fail_on]]
    failed = sum(1 for c in checked if c.status == FileStatus.FAILED)
    if mode == "check":
        code = EXIT_FILE_FAILURES if (failing or failed) else EXIT_OK
    elif mode == "diff":  # as ruff --diff: 1 when a file would change
        code = EXIT_FILE_FAILURES if failed or any(c.changed for c in checked) else EXIT_OK
    else:  # as ruff --fix: 1 when something is left that --check would fail on
        for c in checked:
            c.remaining = [f for f in c.now if f.kind in FAILING[fail_on]]
        unfixed = any(c.not_written or c.remaining for c in checked)
        code = EXIT_FILE_FAILURES if failed or unfixed else EXIT_OK
    _render(checked, failing, mode, output_format, (statistics, console), code)
    if output_format == "text" and not quiet:
        _closing(checked, failing, mode, failed)
    sys.exit(code)


def _one(
    path: Path,
    options: EngineOptions,
    tables: Tables,
    mode: str,
    output_format: str,
    quiet: bool,
    console: LazyConsole,
) -> Checked:
    try:
        before = read_regular(path)
    except OSError as exc:
        raise UserError(path, f"cannot read this file ({exc.strerror})") from exc
    output, record = migrate_file(path, path.as_posix(), tables, options)
    result = FileResult(path.as_posix(), record.status, output, record.events, record.notices)
    checked = Checked(path, before, output, record.status)
    checked.findings = report.findings_of(result, shown(path.as_posix()), before)
    checked.now = checked.findings
    if mode == "diff" and checked.changed and output_format == "text":
        print_diff(console.get(), shown(path.as_posix()), before, output)
    if mode == "inplace" and checked.changed:
        checked.not_written = inplace_write.refusal(path) or ""
        if checked.not_written:  # the file keeps its content: reported, exit code 1
            click.echo(
                f"ms_fmk_transplt: warning: {path}: not rewritten: {checked.not_written}", err=True
            )
            checked.output = before
            return checked
        try:
            inplace_write.write(path, output, before)
        except OSError as exc:  # e.g. a full disk: this file is untouched, earlier ones done
            click.echo(
                f"ms_fmk_transplt: error: {shown(path)}: cannot write ({exc.strerror}); "
                "this file and the ones after it were not changed",
                err=True,
            )
            sys.exit(EXIT_BAD_INPUT)
        checked.now = report.findings_as_written(result, shown(path.as_posix()), result.output)
        if output_format == "text" and not quiet:
            console.get().print(f"migrated {shown(path.as_posix())} ({len(record.events)} changes)")
    return checked


def _render(
    checked: list[Checked],
    failing: list[Finding],
    mode: str,
    output_format: str,
    flags: tuple[bool, LazyConsole],
    code: int,
) -> None:
    """``flags``: --statistics, and the console that says whether findings are coloured
    (--color)."""
    statistics, console = flags
    everything = [f for c in checked for f in c.findings]
    if output_format == "json":
        click.echo(json.dumps(_as_json(checked, mode, code), indent=2))
    elif output_format == "sarif":
        summaries = {f.rule: summary(f.rule) for f in everything}
        click.echo(json.dumps(report.sarif(everything, __version__, summaries), indent=2))
    elif output_format == "github":
        for line in report.github_lines(failing if mode == "check" else everything):
            click.echo(line)
    elif statistics:
        for line in report.statistics(failing if mode == "check" else everything):
            click.echo(line)
    elif mode == "check":
        _print_findings(failing, console)
    elif mode == "inplace":  # as ruff --fix: what is left to do, in the files as now written
        _print_findings([f for c in checked for f in c.remaining], console)


def _print_findings(findings: list[Finding], console: LazyConsole) -> None:
    """``path:line:col: rule message``, and under a finding with a tip ``  = tip: ...`` (as
    ruff's ``= help:`` line under a diagnostic)."""
    colour = bool(findings) and console.colours()  # no finding: no console (no rich import)
    for f in findings:
        where, rule, tip = f.location, f.rule, "= tip:"
        if colour:
            where = click.style(f.location, bold=True)
            rule = click.style(f.rule, fg=COLOURS[f.kind], bold=True)
            tip = click.style(tip, fg="cyan", bold=True)
        click.echo(f"{where}: {rule} {f.message}", color=colour)
        if f.tip:
            click.echo(f"  {tip} {' '.join(f.tip.split())}", color=colour)


def _closing(checked: list[Checked], failing: list[Finding], mode: str, failed: int) -> None:
    changed = sum(1 for c in checked if c.changed)
    verb = {"check": "would change", "diff": "would change", "inplace": "changed"}[mode]
    click.echo(
        f"{len(checked)} file(s) checked, {changed} {verb}, {len(failing)} finding(s), "
        f"{failed} failed",
        err=True,
    )
    if mode == "check" and changed:
        click.echo(
            f"{changed} file{'s' * (changed != 1)} would change: run --inplace (or --diff to "
            "preview)",
            err=True,
        )
    if mode == "inplace":  # as ruff --fix: "Found N errors (M fixed, K remaining)."
        fixed = sum(f.kind == "change" for c in checked if c.changed for f in c.findings)
        left = sum(len(c.remaining) for c in checked)
        click.echo(f"Found {fixed + left} finding(s) ({fixed} fixed, {left} remaining).", err=True)
    if mode == "check" and failing:
        click.echo(
            f"what a rule does and how to opt out: ms_fmk_transplt rule {failing[0].rule}", err=True
        )


def _as_json(checked: list[Checked], mode: str, code: int) -> dict[str, object]:
    def of(c: Checked, kinds: tuple[str, ...]) -> list[dict[str, object]]:
        return [f.as_dict() for f in c.findings if f.kind in kinds]

    files = [
        {
            "path": shown(c.path.as_posix()),
            "status": c.status.value,
            "changed": c.changed,
            "changes": of(c, ("change",)),
            "open_items": of(c, ("manual", "caveat")),
            "advice": of(c, ("advice",)),
            "warnings": of(c, ("note",)),
        }
        for c in checked
    ]
    counts = {
        "files": len(checked),
        "would_change" if mode != "inplace" else "changed": sum(c.changed for c in checked),
        "findings": sum(len(c.findings) for c in checked),
        "failed": sum(c.status == FileStatus.FAILED for c in checked),
    }
    return {
        "schema_version": report.SCHEMA_VERSION,
        "mode": mode,
        "exit_code": code,
        "line_numbers": "input",
        "files": files,
        "counts": counts,
    }
