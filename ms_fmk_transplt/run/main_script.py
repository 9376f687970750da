"""The -m MAIN of ``distributed`` and ``kit``: the file checked and migrated before anything is
written (a file that is not in the input or cannot be migrated, a distributed MAIN without a
DataLoader, a kit's MAIN without one training loop stops the run with one line)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from ms_fmk_transplt.engine import EngineOptions
from ms_fmk_transplt.engine.rules.family_exports import (
    NO_LOOP,
    PRECONDITION,
    already_distributed_rule,
    no_dataloader_rule,
)
from ms_fmk_transplt.errors import UserError
from ms_fmk_transplt.events import FileStatus, Severity
from ms_fmk_transplt.records import FileRecord, RunOptions
from ms_fmk_transplt.run.file_migration import migrate_file
from ms_fmk_transplt.safe_names import shown
from ms_fmk_transplt.scan.discover import Project
from ms_fmk_transplt.tables import Tables


def main_file(project: Project, options: RunOptions, flag: str = "-m") -> str | None:
    """The -m file (the option ``flag``'s) as a path relative to the project root, checked
    before anything is written."""
    if options.main_script is None:
        return None
    given = Path(options.main_script)
    candidates = [given] if given.is_absolute() else [project.root / given, Path.cwd() / given]
    command = f"kit {options.kit}" if options.kit else "distributed"
    for candidate in candidates:
        path = candidate.resolve()
        if path.is_file() and path.suffix == ".py" and project.root in path.parents:
            rel = path.relative_to(project.root)
            if project.single_file is not None and path != project.single_file:
                break
            if options.kit:
                _check_kit_main(path, options.kit)
            return rel.as_posix()
    if not any(c.exists() for c in candidates):
        problem = f"{command} {flag}: no such file (looked in {shown(project.root)} and here)"
    elif not any(project.root in c.resolve().parents for c in candidates):
        problem = f"{command} {flag}: the file is outside the input {shown(project.root)}"
    else:
        problem = f"{command} {flag}: not a .py file of the input {shown(project.root)}"
    raise UserError(options.main_script, problem)


def _check_kit_main(path: Path, kind: str) -> None:
    """A kit's MAIN must not hold a kit's calls already, nor sit beside a msft_kit.py of its
    own (the kit writes its runtime there)."""
    runtime = path.with_name("msft_kit.py")
    if b"msft_kit" in path.read_bytes():
        raise UserError(
            path,
            f"kit {kind} -m: the script calls msft_kit already (a kit's tree?): give the "
            "project, not a kit's output; nothing written",
        )
    if os.path.lexists(runtime):  # a link too, even dangling: never written through
        raise UserError(
            runtime,
            f"kit {kind} -m: a file of the project has the name of the kit's runtime; "
            "nothing written",
        )


def main_notes(main_result: tuple[bytes, FileRecord] | None) -> list[tuple[Severity, str]]:
    """The terminal's WARNINGs about MAIN: a distributed MAIN that was already distributed (only
    migrated), what a kit's guide asks the script to turn off."""
    if main_result is None:
        return []
    # (distributed_mode's ids are asked for: its family imports LibCST, which a run without -m
    # never loads)
    prefix = {already_distributed_rule(): "distributed -m", PRECONDITION: "kit"}
    return [
        (Severity.WARNING, f"{shown(n.file)}:{n.line}: {prefix[n.rule]}: {n.message}")
        for n in main_result[1].notices
        if n.rule in prefix
    ]


def migrate_main(
    project: Project, main_rel: str, engine: EngineOptions, run: RunOptions, tables: Tables
) -> tuple[bytes, FileRecord]:
    if run.kit:  # the GPU side: the calls alone, whatever --select the other files have
        gpu = run.kit_gpu_side
        options = dataclasses.replace(engine, kit=run.kit, kit_only=gpu)
        if gpu:
            options = dataclasses.replace(options, select=(), ignore=())
    else:
        options = dataclasses.replace(
            engine, distributed_target=run.distributed_target, rank_guards=run.rank_guards
        )
    command = f"kit {run.kit}" if run.kit else "distributed"
    output, record = migrate_file(project.root / main_rel, main_rel, tables, options)
    if record.status in (FileStatus.SKIPPED, FileStatus.FAILED):
        raise UserError(
            main_rel,
            f"{command} -m: the file cannot be migrated (see a run without {command}); "
            "nothing written",
        )
    _refusal(main_rel, record, command)
    return output, record


def _refusal(main_rel: str, record: FileRecord, command: str) -> None:
    """A distributed MAIN without a DataLoader, a kit's MAIN without one training loop."""
    no_dataloader = no_dataloader_rule()
    for notice in record.notices:
        if notice.rule == no_dataloader:
            raise UserError(
                main_rel,
                "distributed -m: no torch.utils.data.DataLoader in this file, "
                "the distributed mode shards a DataLoader; nothing written",
            )
        if notice.rule == NO_LOOP:
            hint = ""
            if notice.message.startswith("no training loop found"):
                hint = " (a loop in a module the script imports: --loop FILE)"
            # the message names the file: shown, as the error line's name is (UserError)
            message = shown(notice.message)
            raise UserError(main_rel, f"{command} -m: {message}{hint}; nothing written")
