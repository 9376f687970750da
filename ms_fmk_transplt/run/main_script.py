"""The -m MAIN of ``distributed`` and ``kit``: the file checked and migrated before anything is
written (a file that is not in the input or cannot be migrated, a distributed MAIN without a
DataLoader, a kit's MAIN without one training loop stops the run with one line)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path

from ms_fmk_transplt.engine import EngineOptions
from ms_fmk_transplt.engine.program_facts import ProgramFacts
from ms_fmk_transplt.engine.rules.family_exports import (
    NO_LOOP,
    PRECONDITION,
    already_distributed_rule,
    holds_training_loop,
    no_dataloader_rule,
    project_notices,
)
from ms_fmk_transplt.errors import UserError
from ms_fmk_transplt.events import FileStatus, Severity
from ms_fmk_transplt.records import FileRecord, RunOptions
from ms_fmk_transplt.run.file_migration import migrate_file
from ms_fmk_transplt.safe_names import shown
from ms_fmk_transplt.safety.regular_files import read_small_regular
from ms_fmk_transplt.scan.discover import Project
from ms_fmk_transplt.scan.project_scan import MAX_BYTES as MAX_FACT_BYTES
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
    project: Project,
    main_rel: str,
    engine: EngineOptions,
    run: RunOptions,
    tables: Tables,
    entry_rel: str | None = None,
) -> tuple[bytes, FileRecord]:
    """The -m file migrated (a kit's: the --loop file, when given; ``entry_rel``: the -m file
    then), or one line saying why it cannot be."""
    programs = engine.project.programs if engine.project is not None else ProgramFacts()
    entry = entry_rel or main_rel
    if run.kit:  # the GPU side: the calls alone, whatever --select the other files have
        gpu = run.kit_gpu_side
        options = dataclasses.replace(engine, kit=run.kit, kit_only=gpu)
        if gpu:
            options = dataclasses.replace(options, select=(), ignore=())
        if main_rel != entry and main_rel not in programs.imported_by(entry):
            raise UserError(
                main_rel,
                f"kit {run.kit} --loop: {shown(entry)} never imports it (not directly, not "
                "through the project's modules it imports): its loop would never run; "
                "nothing written",
            )
    else:
        options = dataclasses.replace(
            engine, distributed_target=run.distributed_target, rank_guards=run.rank_guards
        )
    flag = "--loop" if main_rel != entry else "-m"
    command = f"kit {run.kit}" if run.kit else "distributed"
    output, record = migrate_file(project.root / main_rel, main_rel, tables, options)
    if record.status in (FileStatus.SKIPPED, FileStatus.FAILED):
        raise UserError(
            main_rel,
            f"{command} {flag}: the file cannot be migrated (see a run without {command}); "
            "nothing written",
        )
    _refusal(main_rel, record, f"{command} {flag}", lambda: _loop_hint(project, main_rel, programs))
    if run.kit:  # what MAIN runs besides the loop's file: its own checks too
        record.notices.extend(
            project_notices(run.kit, _sources(project, entry, programs), entry, main_rel)
        )
    return output, record


def _sources(project: Project, entry: str, programs: ProgramFacts) -> list[tuple[str, bytes]]:
    """``entry`` and the project's files it imports, with their bytes (regular files only, as
    the facts read them: a link, a file too large say nothing)."""
    found = []
    for rel in programs.imported_by(entry):
        source = read_small_regular(project.root / rel, MAX_FACT_BYTES)
        if source is not None:
            found.append((rel, source))
    return found


def _loop_hint(project: Project, main_rel: str, programs: ProgramFacts) -> str:
    """Where the loop of a script with none may be: a module of the project it imports (the
    --loop to give), or no file of the project."""
    imported = _sources(project, main_rel, programs)
    found = [rel for rel, source in imported if rel != main_rel and holds_training_loop(source)]
    if found:
        return f" (a loop in a module the script imports, {shown(found[0])}: --loop {found[0]})"
    return (
        " (nor in a module of the project it imports: the loop is not in the project; a loop "
        "in an installed library cannot be instrumented: copy the library into the project, or "
        "write the loop in the script)"
    )


def _refusal(main_rel: str, record: FileRecord, command: str, hint: Callable[[], str]) -> None:
    """A distributed MAIN without a DataLoader, a kit's MAIN without one training loop
    (``command``: the command and its option, ``kit aoe -m``)."""
    no_dataloader = no_dataloader_rule()
    for notice in record.notices:
        if notice.rule == no_dataloader:
            raise UserError(
                main_rel,
                "distributed -m: no torch.utils.data.DataLoader in this file, "
                "the distributed mode shards a DataLoader; nothing written",
            )
        if notice.rule == NO_LOOP:
            where = ""  # (the modules it imports are read only for a script without a loop)
            if notice.message.startswith("no training loop found") and "--loop" not in command:
                where = hint()
            # the message names the file: shown, as the error line's name is (UserError)
            message = shown(notice.message)
            raise UserError(main_rel, f"{command}: {message}{where}; nothing written")
