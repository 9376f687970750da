"""Everyday use on a list of files: ``--check`` (CI), ``--diff`` (dry run) and ``--inplace``
(pre-commit fix, or migrating inside your own checkout).

    ms_fmk_transplt --check [PATHS]...    exit 1 when a file would change or has open work
    ms_fmk_transplt --diff [PATHS]...     print the unified diff, write nothing, exit 0
    ms_fmk_transplt --inplace [PATHS]...  rewrite the files in place (atomically)

PATHS are files or folders (their .py/.ipynb files, skipping hidden folders); none is fine.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
import tempfile
from pathlib import Path

import click
from rich.console import Console
from rich.syntax import Syntax

from ms_fmk_transplt.errors import EXIT_BAD_INPUT, EXIT_FILE_FAILURES, EXIT_OK, UserError
from ms_fmk_transplt.events import FileStatus
from ms_fmk_transplt.pipeline import RunOptions, engine_options, migrate_file
from ms_fmk_transplt.tables import resolve_version

SEVERITY = {"change": set(), "manual": {"manual"}, "caveat": {"manual", "caveat"}}
CODE_SUFFIXES = (".py", ".ipynb")


def collect(paths: tuple[str, ...], write: bool = False) -> list[Path]:
    """The files to process, all checked before any is touched: readable, and (``write``)
    in a folder where the atomic replacement can be made."""
    files: list[Path] = []

    def unreadable(err: OSError) -> None:
        raise UserError(err.filename, f"cannot read this folder ({err.strerror})")

    for given in paths:
        path = Path(given)
        if path.is_dir():
            for root, dirs, names in os.walk(path, onerror=unreadable):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
                files += [Path(root) / n for n in sorted(names) if n.endswith(CODE_SUFFIXES)]
        elif path.is_file():
            files.append(path)
        else:
            raise UserError(given, "no such file or folder")
    for file in files:
        if not os.access(file, os.R_OK):
            raise UserError(file, "cannot read this file (Permission denied)")
        folder = file.parent
        if write and not os.access(folder, os.W_OK | os.X_OK):
            raise UserError(folder, "folder is not writable (--inplace replaces files through it)")
    return files


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".msft")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--check", "mode", flag_value="check", help="Report, write nothing; exit 1 on findings."
)
@click.option("--diff", "mode", flag_value="diff", help="Print the diff, write nothing; exit 0.")
@click.option("--inplace", "mode", flag_value="inplace", help="Migrate the files in place.")
@click.argument("paths", nargs=-1, type=click.Path(readable=False))
@click.option(
    "-r", "--rule", "rule_file", metavar="JSON", help="User rules (see -h of the main mode)."
)
@click.option("-s", "--specify-device", is_flag=True, help="Device from DEVICE_ID (see README).")
@click.option("-sim", "--similar", is_flag=True, help="Similar-API replacements (see README).")
@click.option(
    "-v", "--target-version", metavar="X.Y.Z", help="torch_npu version (default the newest)."
)
@click.option(
    "--fail-on",
    type=click.Choice(["change", "manual", "caveat"]),
    default="manual",
    show_default=True,
    help="--check fails on changes, plus unsupported rows needing manual work, plus caveats.",
)
@click.option("--report-format", type=click.Choice(["text", "json"]), default="text")
@click.option("-q", "--quiet", is_flag=True, help="No summary line.")
def paths_main(
    mode, paths, rule_file, specify_device, similar, target_version, fail_on, report_format, quiet
):
    """Check, diff or migrate in place a list of files (pre-commit, CI, your own checkout)."""
    try:
        try:
            version = resolve_version(target_version) if target_version else ""
        except ValueError as exc:
            raise UserError(f"-v/--target-version: {exc}") from exc
        options = engine_options(
            RunOptions(
                input=".",
                output=".",
                rule_file=rule_file,
                specify_device=specify_device,
                similar=similar,
                target_version=version,
            )
        )
        files = collect(paths, write=mode == "inplace")
    except UserError as exc:
        click.echo(f"ms_fmk_transplt: error: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    console = Console(highlight=False, soft_wrap=True, markup=False)
    findings, results, failed, would_change = [], [], 0, 0
    for path in files:
        rel = path.as_posix()
        before = path.read_bytes()
        output, record = migrate_file(path, rel, options)
        failed += record.status == FileStatus.FAILED
        changed = output != before
        would_change += changed
        open_work = [n for n in record.notices if n.open_work and n.action in SEVERITY[fail_on]]
        for e in record.events:
            findings.append(f"{rel}:{e.start_line}: {e.rule} {e.message}")
        for n in open_work:
            findings.append(f"{rel}:{n.line}: {n.rule} [{n.category}] {n.message.splitlines()[0]}")
        results.append(
            {
                "path": rel,
                "status": record.status.value,
                "changed": changed,
                "changes": [
                    {"line": e.start_line, "rule": e.rule, "message": e.message}
                    for e in record.events
                ],
                "unsupported": [
                    {
                        "line": n.line,
                        "op": n.api,
                        "category": n.category,
                        "action": n.action,
                        "tip": n.tip,
                    }
                    for n in record.notices
                    if n.open_work
                ],
                "advice": [
                    {"line": n.line, "rule": n.rule, "api": n.api, "tip": n.tip}
                    for n in record.notices
                    if n.advice
                ],
            }
        )
        if mode == "diff" and changed and report_format == "text":
            diff = "".join(
                difflib.unified_diff(
                    before.decode("utf-8", "replace").splitlines(keepends=True),
                    output.decode("utf-8", "replace").splitlines(keepends=True),
                    f"a/{rel.lstrip('/')}",
                    f"b/{rel.lstrip('/')}",
                )
            )
            console.print(
                Syntax(diff, "diff", theme="ansi_dark") if console.is_terminal else diff, end=""
            )
        if mode == "inplace" and changed:
            try:
                _atomic_write(path, output)
            except OSError as exc:  # e.g. a full disk: this file is untouched, earlier ones done
                click.echo(
                    f"ms_fmk_transplt: error: {path}: cannot write ({exc.strerror}); "
                    "this file and the ones after it were not changed",
                    err=True,
                )
                sys.exit(EXIT_BAD_INPUT)
            if report_format == "text" and not quiet:
                console.print(f"migrated {rel} ({len(record.events)} changes)")
    if mode == "check":
        code = EXIT_FILE_FAILURES if (findings or failed) else EXIT_OK
    else:
        code = EXIT_FILE_FAILURES if failed else EXIT_OK
    if report_format == "json":
        click.echo(
            json.dumps(
                {
                    "mode": mode,
                    "exit_code": code,
                    "files": results,
                    "counts": {
                        "files": len(files),
                        "would_change" if mode != "inplace" else "changed": would_change,
                        "findings": len(findings),
                        "failed": failed,
                    },
                },
                indent=2,
            )
        )
    else:
        if mode == "check":
            for line in findings:
                click.echo(line)
        if not quiet:
            verb = {"check": "would change", "diff": "would change", "inplace": "changed"}[mode]
            click.echo(
                f"{len(files)} file(s) checked, {would_change} {verb}, "
                f"{len(findings)} finding(s), {failed} failed",
                err=True,
            )
            if findings:
                first = findings[0].split(": ", 2)[1].split(" ", 1)[0]
                click.echo(
                    f"what a rule does and how to opt out: ms_fmk_transplt rule {first}", err=True
                )
    sys.exit(code)
