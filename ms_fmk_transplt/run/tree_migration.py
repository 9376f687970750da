"""The tree of a run: every file of the project migrated (a process pool for large trees) or
copied into the staging folder, in input order, with its record; links recreated, never
followed; CUDA sources (.cu, ...) listed as open work."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import time
from collections.abc import Iterator
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import NamedTuple, Optional

from ms_fmk_transplt.engine import EngineOptions
from ms_fmk_transplt.engine.rules.family_exports import (
    LAUNCH_SUFFIXES,
    MAX_BYTES,
    category_rule,
    config_notice,
    file_notice,
)
from ms_fmk_transplt.errors import UserError
from ms_fmk_transplt.events import FileStatus, Notice, Severity
from ms_fmk_transplt.records import FileRecord, ProgressSink, RunResult
from ms_fmk_transplt.report.names import REPORTS
from ms_fmk_transplt.run import shards
from ms_fmk_transplt.run.file_migration import failed_record, migrate_file
from ms_fmk_transplt.run.previous_tree import (
    Previous,
    keep_copied,
    keep_written,
    previous_tree,
)
from ms_fmk_transplt.run.staging import INTERRUPTED
from ms_fmk_transplt.run.worker_pool import WorkerPool, pool_context
from ms_fmk_transplt.safe_names import shown
from ms_fmk_transplt.safety.fs_safety import create_new
from ms_fmk_transplt.safety.regular_files import (
    copy_regular,
    open_regular,
    read_regular,
    special_kind,
)
from ms_fmk_transplt.scan.cache import Cache
from ms_fmk_transplt.scan.discover import Project
from ms_fmk_transplt.tables import Tables
from ms_fmk_transplt.tables.unsupported_table import UnsupportedTable

# a worker's task: input path, path relative to the project, output path (None: nothing
# written, --analyse)
Task = tuple[str, str, Optional[str]]


class Shared(NamedTuple):
    """What every task of a run shares: handed to each worker once, when it starts (the
    engine's options hold the project's facts, hundreds of KB on a large tree: pickled with
    every chunk of tasks they cost more than the chunk). ``previous``: the previous output
    tree whose same files are kept (None: none)."""

    tables: Tables
    options: EngineOptions
    cache: Cache | None
    previous: Previous | None


def _entries(
    project: Project, notes: list[tuple[Severity, str]], outputs: tuple[Path, ...]
) -> Iterator[tuple[Path, Path, bool]]:
    """The files of the project, and whether each is code to migrate. FIFOs, sockets and
    devices are never opened nor copied, nor folders too deep or paths too long for the system
    (in the input or under ``outputs``): each is a WARNING in ``notes``."""
    skipped: list[tuple[Path, str]] = []
    for rel_path in project.files(skipped, outputs):
        notes.extend((Severity.WARNING, _skipped_note(*s)) for s in skipped)
        skipped.clear()
        src = project.root / rel_path
        special = special_kind(src)
        if special is not None:
            notes.append((Severity.WARNING, _special_note(rel_path, special)))
            continue
        code = src.suffix in (".py", ".ipynb")
        yield rel_path, src, code and src.is_file() and not src.is_symlink()
    notes.extend((Severity.WARNING, _skipped_note(*s)) for s in skipped)


def _skipped_note(rel_path: Path, problem: str) -> str:
    return f"{shown(rel_path.as_posix())}: {problem}: not read and not copied"


def _special_note(rel_path: Path, kind: str) -> str:
    return (
        f"{shown(rel_path.as_posix())}: {kind}, not a regular file: not read and not copied "
        "(only regular files, folders and links are)"
    )


# what a run of the tool leaves at the root of its tree (report/names.py's, and those of
# --analyse and --library)
_OLD_REPORTS = (*REPORTS, "effort.csv", "library_api.csv")


def _without_old_reports(
    entries: list[tuple[Path, Path, bool]], notes: list[tuple[Severity, str]]
) -> list[tuple[Path, Path, bool]]:
    """A kit on a migrated tree (its root holds the tool's log and change_list.csv, regular
    files): the previous run's reports are not copied into the kit's tree (their lines are not
    its); a link of the project with a report's name is kept (the report is renamed)."""
    root = {
        rel.as_posix(): src
        for rel, src, _ in entries
        if len(rel.parts) == 1 and src.is_file() and not src.is_symlink()
    }
    log = root.get("msFmkTranspltlog.txt")
    if log is None or "change_list.csv" not in root or not _tool_log(log):
        return entries
    old = [name for name in _OLD_REPORTS if name in root]
    notes.append(
        (
            Severity.INFO,
            f"a migrated tree: its previous run's reports ({', '.join(old)}) are not copied "
            "into the kit's tree",
        )
    )
    return [e for e in entries if e[1] not in [root[name] for name in old]]


def _tool_log(path: Path) -> bool:
    """Whether ``path`` starts as the tool's log does (its first line names the tool)."""
    try:
        with open_regular(path) as handle:
            first = handle.read(200)
    except OSError:
        return False
    return b" ms_fmk_transplt " in first.split(b"\n", 1)[0]


def migrate_tree(
    project: Project,
    staging: Path,
    result: RunResult,
    cache: Cache | None,
    progress: ProgressSink | None = None,
) -> None:
    """Every file of the project into the staging folder (migrated, copied, or only analysed
    with --analyse), its record appended to ``result`` in input order."""
    write = not result.options.analyse
    start = time.perf_counter()
    overwrite = result.options.overwrite
    previous = previous_tree(result.output_dir, staging, overwrite) if write else None
    outputs = (staging, result.output_dir)  # the longer holds every path of the output
    entries = list(_entries(project, result.notes, outputs))  # paths only: streamed contents
    if result.options.kit:  # (a plain run keeps them: it is given what it is given)
        entries = _without_old_reports(entries, result.notes)
    result.timings["discover"] = time.perf_counter() - start
    result.timings["write"] = 0.0  # the parent's writes; the workers' are in their records
    result.order.update((rel_path.as_posix(), i) for i, (rel_path, _, _) in enumerate(entries))
    shard = result.options.shard
    if shard is not None:
        entries = [e for e in entries if shards.owns(shard, e[0].as_posix())]
    python = [
        (str(src), rel_path.as_posix(), str(staging / rel_path) if write else None)
        for rel_path, src, is_py in entries
        if is_py and rel_path.as_posix() != result.main_rel
    ]
    result.planned.extend(rel_path.as_posix() for rel_path, _, _ in entries)
    if progress is not None:
        progress.start(len(entries))
    shared = Shared(result.tables, result.engine, cache, previous)
    with _migrated(python, result.options.jobs, shared) as migrated:
        for rel_path, src, is_py in entries:
            if INTERRUPTED.is_set():
                raise KeyboardInterrupt
            if is_py and rel_path.as_posix() != result.main_rel:
                record = next(migrated)  # migrated and written by _work
                assert record.path == rel_path.as_posix()
            else:
                record = _other_entry(project, staging, result, rel_path, src, previous)
            result.files.append(record)
            if progress is not None:
                progress.advance(record)


def _other_entry(
    project: Project,
    staging: Path,
    result: RunResult,
    rel_path: Path,
    src: Path,
    previous: Previous | None,
) -> FileRecord:
    """The main script of distributed mode (migrated before the tree) or a file that is not
    Python: written (copied) into the staging folder, timed with the workers' writes."""
    write = not result.options.analyse
    dst = staging / rel_path
    rel = rel_path.as_posix()
    start = time.perf_counter()
    if rel == result.main_rel and result.main_result is not None:
        output, record = result.main_result
        if output is not None and write:
            dst.parent.mkdir(parents=True, exist_ok=True)
            _write_entry(output, src, dst)
        result.timings["write"] += time.perf_counter() - start
        return record
    if write:
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink() or not keep_copied(previous, rel, src, dst):
            _copy_entry(src, dst)
    result.timings["write"] += time.perf_counter() - start
    if src.is_symlink():
        note = _link_note(src, rel, project.root, result.output_dir)
        if note:
            result.notes.append((Severity.WARNING, note))
    record = FileRecord(rel, FileStatus.UNCHANGED, False, False, datetime.now())
    table = result.tables.unsupported
    if src.is_file() and not src.is_symlink():
        if src.suffix in table.cuda_file_suffixes:
            record.notices.append(_cuda_source_notice(src, rel, table))
        elif src.suffix in LAUNCH_SUFFIXES and src.stat().st_size <= MAX_BYTES:
            notice = file_notice(rel, read_regular(src), src.suffix, table)
            if notice is not None:  # run.sh / config.yaml passing cuda, nccl
                record.notices.append(notice)
            named = config_notice(rel, read_regular(src), src.suffix, table)
            if named is not None:  # a recipe naming bitsandbytes' optimizers
                record.notices.append(named)
    return record


@contextlib.contextmanager
def _migrated(tasks: list[Task], jobs: int, shared: Shared) -> Iterator[Iterator[FileRecord]]:
    """Migration results in task order; a process pool for large trees (worker_pool.py: a
    file that kills its worker is reported as failed; each worker is handed what the tasks
    share, ``shared``, once, when it starts). Leaving the block stops the pool and waits for
    its workers: none is still writing into a staging folder that an interrupted run
    removes."""
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(tasks) < 16:
        yield map(partial(_work, shared), tasks)
        return
    context = pool_context()
    crashed = partial(_crashed, shared.tables)
    pool = WorkerPool(context, min(jobs, len(tasks)), _work, crashed, shared)
    try:
        yield pool.results(tasks)
    finally:
        pool.close()


def _work(shared: Shared, task: Task) -> FileRecord:
    """Pool worker: one file, migrated and written to its place in the staging folder
    (``dst``; None when nothing is written, with --analyse)."""
    path, rel, dst = task
    output, record = migrate_file(Path(path), rel, shared.tables, shared.options, shared.cache)
    if dst is not None:
        start = time.perf_counter()
        target = Path(dst)
        target.parent.mkdir(parents=True, exist_ok=True)
        # a second try after a worker died later in the chunk it was in: what it wrote goes
        target.unlink(missing_ok=True)
        # (unchanged: the bytes migrate_file read, not a second read of the input)
        if not keep_written(shared.previous, rel, output, Path(path), target):
            _write_entry(output, Path(path), target)
        record.timings["write"] = time.perf_counter() - start
    return record


def _crashed(tables: Tables, task: Task) -> FileRecord:
    """The record of a file whose worker process died migrating it; copied unchanged."""
    path, rel, dst = task
    if dst is not None:
        target = Path(dst)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)  # (what the worker may have half-written)
        _copy_entry(Path(path), target)
    return failed_record(
        rel,
        "the worker process migrating this file died (a crash in native code, or out of "
        "memory); file copied unchanged",
        tables,
    )


def _write_entry(output: bytes, src: Path, dst: Path) -> None:
    try:
        create_new(dst, output)  # a name nothing holds: never through a link
        shutil.copystat(src, dst)
    except OSError as exc:  # the output side: run() reports "cannot write"
        raise OSError(exc.errno, exc.strerror, os.fspath(dst)) from exc


def _copy_entry(src: Path, dst: Path) -> None:
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
        return
    try:
        copy_regular(src, dst)  # a FIFO or device that replaced the file is refused, not read
    except OSError as exc:
        if exc.errno in _WRITE_ERRNOS:  # the output side: run() reports "cannot write"
            raise OSError(exc.errno, exc.strerror, os.fspath(dst)) from exc
        if str(exc.filename or src) != str(src):
            raise
        if INTERRUPTED.is_set():
            raise KeyboardInterrupt from exc  # the signal's, not a file that cannot be read
        raise UserError(src, f"cannot read this file ({exc.strerror})") from exc


_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG}


def _link_note(src: Path, rel: str, root: Path, final_dir: Path) -> str | None:
    """Links are recreated verbatim, never followed (no loops, nothing outside the input is
    read). One that leads outside the input is worth a warning: its target is not migrated."""
    target = os.readlink(src)
    resolved = Path(os.path.realpath(src.parent / target))
    if resolved == root or root in resolved.parents:
        return None
    note = (
        f"{shown(rel)}: symbolic link kept as is, not followed: -> {shown(target)} leads "
        "outside the input"
    )
    from_output = Path(os.path.realpath((final_dir / rel).parent / target))
    if not os.path.isabs(target) and from_output != resolved:
        note += f" (from the output it resolves to {shown(from_output)}, not {shown(resolved)})"
    return note + "; what it points to is not migrated"


def _cuda_source_notice(src: Path, rel: str, table: UnsupportedTable) -> Notice:
    entry = table.cuda_file
    with open_regular(src) as fh:
        lines = sum(1 for _ in fh)
    message = "CUDA source file: cannot run on the NPU"
    return Notice.of_entry(
        (rel, 1),
        category_rule(entry.category),
        Severity.WARNING,
        message,
        entry,
        api=src.name,
        end_line=max(1, lines),
    )
