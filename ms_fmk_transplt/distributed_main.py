"""distributed -m MAIN: the file checked and migrated before anything is written (a file that
is not in the input, cannot be migrated or has no DataLoader stops the run with one line)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ms_fmk_transplt.discover import Project
from ms_fmk_transplt.engine import EngineOptions
from ms_fmk_transplt.errors import UserError
from ms_fmk_transplt.events import FileStatus, Severity
from ms_fmk_transplt.file_migration import migrate_file
from ms_fmk_transplt.records import FileRecord, RunOptions
from ms_fmk_transplt.safe_names import shown
from ms_fmk_transplt.tables import Tables


def main_file(project: Project, options: RunOptions) -> str | None:
    """The -m file as a path relative to the project root, checked before anything is written."""
    if options.distributed_main is None:
        return None
    given = Path(options.distributed_main)
    candidates = [given] if given.is_absolute() else [project.root / given, Path.cwd() / given]
    for candidate in candidates:
        path = candidate.resolve()
        if path.is_file() and path.suffix == ".py" and project.root in path.parents:
            rel = path.relative_to(project.root)
            if project.single_file is not None and path != project.single_file:
                break
            return rel.as_posix()
    if not any(c.exists() for c in candidates):
        problem = f"distributed -m: no such file (looked in {project.root} and here)"
    elif not any(project.root in c.resolve().parents for c in candidates):
        problem = f"distributed -m: the file is outside the input {project.root}"
    else:
        problem = f"distributed -m: not a .py file of the input {project.root}"
    raise UserError(options.distributed_main, problem)


def main_notes(main_result: tuple[bytes, FileRecord] | None) -> list[tuple[Severity, str]]:
    """The terminal's WARNING for a MAIN that was already distributed (only migrated)."""
    if main_result is None:
        return []
    # imported here, not to dodge a cycle: it imports LibCST, which a run without -m never loads
    from ms_fmk_transplt.engine.rules.distributed_mode.existing_distributed import (
        ALREADY_DISTRIBUTED,
    )

    return [
        (Severity.WARNING, f"{shown(n.file)}:{n.line}: distributed -m: {n.message}")
        for n in main_result[1].notices
        if n.rule == ALREADY_DISTRIBUTED
    ]


def migrate_main(
    project: Project, main_rel: str, engine: EngineOptions, run: RunOptions, tables: Tables
) -> tuple[bytes, FileRecord]:
    options = dataclasses.replace(
        engine, distributed_target=run.distributed_target, rank_guards=run.rank_guards
    )
    output, record = migrate_file(project.root / main_rel, main_rel, tables, options)
    # imported here, not to dodge a cycle: it imports LibCST, which a run without -m never loads
    from ms_fmk_transplt.engine.rules.distributed_mode.distributed_plan import NO_DATALOADER

    if record.status in (FileStatus.SKIPPED, FileStatus.FAILED):
        raise UserError(
            main_rel,
            "distributed -m: the file cannot be migrated (see a run "
            "without distributed); nothing written",
        )
    if any(n.rule == NO_DATALOADER for n in record.notices):
        raise UserError(
            main_rel,
            "distributed -m: no torch.utils.data.DataLoader in this file, "
            "the distributed mode shards a DataLoader; nothing written",
        )
    return output, record
