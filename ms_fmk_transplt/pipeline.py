"""The run: discover files -> migrate each (engine) -> write the output tree -> reports.

Output is assembled in a hidden sibling folder and moved into place at the end, so a
``<name>_msft`` folder only ever appears complete. The input tree is only read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import multiprocessing
import os
import shutil
import signal
import time
import traceback
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from ms_fmk_transplt import shards
from ms_fmk_transplt.cache import Cache, default_dir, fingerprint
from ms_fmk_transplt.discover import (
    ANALYSIS_SUFFIX,
    OUTPUT_SUFFIX,
    Project,
    output_dir_for,
    resolve_project,
)
from ms_fmk_transplt.engine import EngineOptions, migrate_source
from ms_fmk_transplt.engine.recorder import category_rule
from ms_fmk_transplt.errors import UserError
from ms_fmk_transplt.events import FileStatus, Notice, Severity
from ms_fmk_transplt.notebook import migrate_notebook
from ms_fmk_transplt.project_scan import facts_fingerprint, scan_project
from ms_fmk_transplt.records import FileRecord, RunOptions, RunResult
from ms_fmk_transplt.report import (
    advice_csv,
    change_list,
    effort,
    html_report,
    launch_script,
    log,
    unsupported_op,
)
from ms_fmk_transplt.report.names import report_names
from ms_fmk_transplt.rule_catalog import OPEN_WORK, SKIP_FILE, declare
from ms_fmk_transplt.rule_pages import known_ids, suggestions
from ms_fmk_transplt.staging import INTERRUPTED, assemble
from ms_fmk_transplt.tables import load_tables
from ms_fmk_transplt.tables.user_rule_file import load_user_rules

INTERNAL_ERROR = declare(
    "engine.internal_error",
    "the tool failed on a file (a bug): the file is copied unchanged, the run exits 1",
    "Each file is migrated in isolation: when the engine raises on one, that file is copied to the "
    "output byte for byte, listed as a `failed_file` row (open work: migrate it by hand) with the "
    "exception, its traceback is in the log, the other files are migrated as usual, and the run "
    "exits with code 1 at the end. Please report it with the file (or a reduced copy).",
    kind=OPEN_WORK,
    opt_out=SKIP_FILE,
)


def _rel(path: Path) -> str:
    return path.as_posix()


def rule_patterns(values: tuple[str, ...]) -> tuple[str, ...]:
    """--select / --ignore values: repeated and/or comma-separated rule ids or id prefixes."""
    return tuple(p.strip() for v in values for p in v.split(",") if p.strip())


def _check_rule_pattern(flag: str, pattern: str) -> None:
    if not any(i == pattern or i.startswith(pattern + ".") for i in known_ids()):
        close = suggestions(pattern)[:3]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UserError(flag, f"{pattern}: not a rule id or id prefix{hint}")


def engine_options(options: RunOptions) -> EngineOptions:
    """Validates what the user asked for (-r file) before anything is written."""
    rules = load_user_rules(options.rule_file) if options.rule_file else None
    for flag, patterns in (("--select", options.select), ("--ignore", options.ignore)):
        for pattern in patterns:
            _check_rule_pattern(flag, pattern)
    engine = EngineOptions(
        user_rules=rules,
        specify_device=options.specify_device,
        similar=options.similar,
        target_version=options.target_version,
        select=options.select,
        ignore=options.ignore,
        todo_comments=options.todo_comments,
    )
    if options.max_file_mib is None:
        return engine
    limit = int(options.max_file_mib * 2**20)  # an explicit limit holds for both passes
    return dataclasses.replace(engine, max_file_bytes=limit, max_cst_bytes=limit)


def migrate_file(
    source_path: Path, rel: str, options: EngineOptions | None = None, cache: Cache | None = None
) -> tuple[bytes, FileRecord]:
    data = _read(source_path)
    now = datetime.now()
    key = cache.key(rel, data) if cache is not None else None
    if key is not None:
        hit = cache.get(key)
        if hit is not None:
            output, record = hit  # output None: the file is unchanged
            record = dataclasses.replace(record, time=now, cached=True, timings={})
            return (data if output is None else output), record
    tables = load_tables(options.target_version if options else "")
    try:
        if source_path.suffix == ".ipynb":
            result = migrate_notebook(data, rel, tables, options)
        else:
            result = migrate_source(data, rel, tables, options)
    except BaseException as exc:  # noqa: BLE001 - per-file isolation: log, copy unchanged, go on
        # (BaseException: a panic in LibCST's native parser arrives as pyo3's PanicException,
        # which is not an Exception)
        if isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit)):
            raise
        if INTERRUPTED.is_set():
            raise KeyboardInterrupt from exc
        tb = traceback.format_exc(limit=6)
        failed = tables.unsupported.failed_file
        notice = Notice(
            rel,
            1,
            INTERNAL_ERROR,
            Severity.ERROR,
            f"internal error, file copied unchanged: {type(exc).__name__}: {exc}\n{tb}",
            api=failed.key,
            category=failed.category,
            action=failed.action,
            tip=failed.tip,
        )
        return data, FileRecord(rel, FileStatus.FAILED, True, True, now, notices=[notice])
    record = FileRecord(
        rel,
        result.status,
        True,
        result.analysed,
        now,
        result.events,
        result.notices,
        timings=result.timings,
        declined=result.declined,
    )
    if key is not None:
        changed = result.status == FileStatus.CHANGED
        cache.put(key, (result.output if changed else None, record))
    return result.output, record


def _work(task: tuple[str, str, EngineOptions, Cache | None, str | None]) -> FileRecord:
    """Pool worker: one file, migrated and written to its place in the staging folder
    (``dst``; None when nothing is written, with --analyse)."""
    path, rel, options, cache, dst = task
    output, record = migrate_file(Path(path), rel, options, cache)
    if dst is not None:
        start = time.perf_counter()
        target = Path(dst)
        target.parent.mkdir(parents=True, exist_ok=True)
        if record.status == FileStatus.CHANGED:
            _write_entry(output, Path(path), target)
        else:
            _copy_entry(Path(path), target)
        record.timings["write"] = time.perf_counter() - start
    return record


def _write_entry(output: bytes, src: Path, dst: Path) -> None:
    try:
        dst.write_bytes(output)
        shutil.copystat(src, dst)
    except OSError as exc:  # the output side: run() reports "cannot write"
        raise OSError(exc.errno, exc.strerror, os.fspath(dst)) from exc


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UserError(path, f"cannot read this file ({exc.strerror})") from exc


def _link_note(src: Path, rel: str, root: Path, final_dir: Path) -> str | None:
    """Links are recreated verbatim, never followed (no loops, nothing outside the input is
    read). One that leads outside the input is worth a warning: its target is not migrated."""
    target = os.readlink(src)
    resolved = Path(os.path.realpath(src.parent / target))
    if resolved == root or root in resolved.parents:
        return None
    note = f"{rel}: symbolic link kept as is, not followed: -> {target} leads outside the input"
    from_output = Path(os.path.realpath((final_dir / rel).parent / target))
    if not os.path.isabs(target) and from_output != resolved:
        note += f" (from the output it resolves to {from_output}, not {resolved})"
    return note + "; what it points to is not migrated"


def _copy_entry(src: Path, dst: Path) -> None:
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
        return
    try:
        shutil.copy2(src, dst)
    except OSError as exc:
        if exc.errno in _WRITE_ERRNOS:  # the output side: run() reports "cannot write"
            raise OSError(exc.errno, exc.strerror, os.fspath(dst)) from exc
        if str(exc.filename or src) != str(src):
            raise
        raise UserError(src, f"cannot read this file ({exc.strerror})") from exc


_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG}


def run(options: RunOptions, progress=None) -> RunResult:
    engine = engine_options(options)
    project = resolve_project(options.input)
    if not options.merge_shards:  # what the files define for each other (CUDA-only code)
        facts = scan_project(project, options.target_version)
        engine = dataclasses.replace(engine, project=facts)
    main_rel = _distributed_main(project, options)
    final_dir = output_dir_for(
        project, options.output, ANALYSIS_SUFFIX if options.analyse else OUTPUT_SUFFIX
    )
    if options.shard is not None:
        final_dir = final_dir.with_name(final_dir.name + shards.suffix(options.shard))
    if final_dir.exists() and not options.overwrite:
        raise UserError(final_dir, "already exists; pass --overwrite to replace it")
    if options.merge_shards:
        parts = shards.load_parts(final_dir, options.merge_shards)
    started = datetime.now()
    main_result = None
    if main_rel is not None and not options.merge_shards:  # fails before anything is created
        main_result = _migrate_main(project, main_rel, engine, options)
    result = RunResult(options, project, final_dir, started, engine=engine)
    result.fingerprint = _fingerprint(options, engine)
    if main_rel is not None:
        result.main_rel, result.main_result = main_rel, main_result
        result.notes.extend(_main_notes(main_result))
    if options.merge_shards:
        assemble(result, lambda staging: _merge_parts(parts, staging, result))
        shards.remove_parts(parts)
    else:
        assemble(result, lambda staging: _migrate_and_report(project, staging, result, progress))
    return result


def _migrate_and_report(project: Project, staging: Path, result: RunResult, progress) -> None:
    _migrate_tree(project, staging, result, progress)
    start = time.perf_counter()
    _write_reports(staging, result)
    result.timings["reports"] = time.perf_counter() - start
    if result.options.shard is not None:
        shards.write_records(staging / shards.RECORDS, result, result.options.shard, result.order)


def _merge_parts(parts, staging: Path, result: RunResult) -> None:
    """--merge-shards: the files of every part, and the reports of all their records."""
    items = sorted((item for _, data in parts for item in data["files"]), key=lambda i: i["index"])
    result.files = [shards.file_record(item) for item in items]
    result.total_files = len(result.files)
    result.started = min(datetime.fromisoformat(data["started"]) for _, data in parts)
    for _, data in parts:
        for severity, message in data["notes"]:
            if (Severity(severity), message) not in result.notes:
                result.notes.append((Severity(severity), message))
    if not result.options.analyse:
        shards.gather(parts, staging)
    _write_reports(staging, result)


def _cuda_source_notice(src: Path, rel: str) -> Notice:
    entry = load_tables().unsupported.cuda_file
    with src.open("rb") as fh:
        lines = sum(1 for _ in fh)
    return Notice(
        rel,
        1,
        category_rule(entry.category),
        Severity.WARNING,
        "CUDA source file: cannot run on the NPU",
        api=src.name,
        category=entry.category,
        action=entry.action,
        tip=entry.tip,
        end_line=max(1, lines),
    )


def _engine_fingerprint(engine: EngineOptions) -> str:
    rules = engine.user_rules
    extra = "|".join(
        [
            Path(rules.path).read_text(encoding="utf-8") if rules else "",
            str(engine.specify_device),
            str(engine.similar),
            load_tables(engine.target_version).torch_npu_version,
            ",".join(engine.select) + "|" + ",".join(engine.ignore) + f"|{engine.todo_comments}",
            facts_fingerprint(engine.project),
        ]
    )
    return fingerprint(extra)


def _fingerprint(options: RunOptions, engine: EngineOptions) -> str:
    """Everything that decides a run's output besides the files: parts of a sharded run must
    agree on it."""
    what = (
        _engine_fingerprint(engine),
        options.analyse,
        options.max_file_mib,
        options.distributed_main,
        options.distributed_target,
    ) + (() if options.rank_guards else ("no rank guards",))
    return fingerprint(repr(what))


def _make_cache(options: RunOptions, engine: EngineOptions) -> Cache | None:
    if not options.use_cache:
        return None
    root = Path(options.cache_dir) if options.cache_dir else default_dir()
    if root is None:
        return None
    return Cache(root, _engine_fingerprint(engine))


def _entries(project: Project):
    for rel_path in project.files():
        src = project.root / rel_path
        code = src.suffix in (".py", ".ipynb")
        yield rel_path, src, code and src.is_file() and not src.is_symlink()


def _migrate_tree(project: Project, staging: Path, result: RunResult, progress=None) -> None:
    write = not result.options.analyse
    cache = _make_cache(result.options, result.engine)
    start = time.perf_counter()
    entries = list(_entries(project))  # paths only: contents are streamed
    result.timings["discover"] = time.perf_counter() - start
    result.timings["write"] = 0.0  # the parent's writes; the workers' are in their records
    result.order = {rel_path.as_posix(): i for i, (rel_path, _, _) in enumerate(entries)}
    shard = result.options.shard
    if shard is not None:
        entries = [e for e in entries if shards.owns(shard, e[0].as_posix())]
    python = [
        (
            str(src),
            rel_path.as_posix(),
            result.engine,
            cache,
            str(staging / rel_path) if write else None,
        )
        for rel_path, src, is_py in entries
        if is_py and rel_path.as_posix() != result.main_rel
    ]
    result.total_files = len(entries)
    if progress is not None:
        progress.start(len(entries))
    with _migrated(python, result.options.jobs) as migrated:
        for rel_path, src, is_py in entries:
            if INTERRUPTED.is_set():
                raise KeyboardInterrupt
            if is_py and rel_path.as_posix() != result.main_rel:
                record = next(migrated)  # migrated and written by _work
                assert record.path == rel_path.as_posix()
            else:
                record = _other_entry(project, staging, result, rel_path, src)
            result.files.append(record)
            if progress is not None:
                progress.advance(record)


def _other_entry(
    project: Project, staging: Path, result: RunResult, rel_path: Path, src: Path
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
        _copy_entry(src, dst)
    result.timings["write"] += time.perf_counter() - start
    if src.is_symlink():
        note = _link_note(src, rel, project.root, result.output_dir)
        if note:
            result.notes.append((Severity.WARNING, note))
    record = FileRecord(rel, FileStatus.UNCHANGED, False, False, datetime.now())
    cuda_suffixes = load_tables().unsupported.cuda_file_suffixes
    if src.is_file() and not src.is_symlink() and src.suffix in cuda_suffixes:
        record.notices.append(_cuda_source_notice(src, rel))
    return record


@contextlib.contextmanager
def _migrated(tasks: list, jobs: int) -> Iterator[Iterator[FileRecord]]:
    """Migration results in task order; a process pool for large trees. Leaving the block
    stops the pool and waits for its workers: none is still writing into a staging folder
    that an interrupted run removes."""
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(tasks) < 16:
        yield map(_work, tasks)
        return
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with context.Pool(min(jobs, len(tasks)), initializer=_quiet_worker) as pool:
        yield pool.imap(_work, tasks, chunksize=4)


def _quiet_worker() -> None:
    """Workers leave Ctrl-C to the parent (which stops the pool) and die silently when the
    pool is terminated, instead of each printing a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _distributed_main(project: Project, options: RunOptions) -> str | None:
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


def _main_notes(main_result: tuple[bytes, FileRecord] | None) -> list[tuple[Severity, str]]:
    """The terminal's WARNING for a MAIN that was already distributed (only migrated)."""
    if main_result is None:
        return []
    from ms_fmk_transplt.engine.existing_distributed import ALREADY_DISTRIBUTED

    return [
        (Severity.WARNING, f"{n.file}:{n.line}: distributed -m: {n.message}")
        for n in main_result[1].notices
        if n.rule == ALREADY_DISTRIBUTED
    ]


def _migrate_main(
    project: Project, main_rel: str, engine: EngineOptions, run: RunOptions
) -> tuple[bytes, FileRecord]:
    options = dataclasses.replace(
        engine, distributed_target=run.distributed_target, rank_guards=run.rank_guards
    )
    output, record = migrate_file(project.root / main_rel, main_rel, options)
    from ms_fmk_transplt.engine.distributed_mode import NO_DATALOADER  # (imports LibCST)

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


def _write_reports(staging: Path, result: RunResult) -> None:
    user_files = {f.path for f in result.files}
    names = report_names(
        user_files, distributed=result.main_rel is not None, analyse=result.options.analyse
    )
    for key, name in names.items():
        if name != key:
            result.notes.append(
                (Severity.WARNING, f"the project has its own {key}; this run's report is {name}")
            )
    result.finished = datetime.now()
    change_list.write(staging / names["change_list.csv"], result)
    result.report_paths["change_list"] = result.output_dir / names["change_list.csv"]
    unsupported_op.write_xlsx(staging / names["unsupported_op.xlsx"], result, names["report.html"])
    unsupported_op.write_csv(staging / names["unsupported_op.csv"], result)
    result.report_paths["unsupported"] = result.output_dir / names["unsupported_op.xlsx"]
    result.report_paths["unsupported_csv"] = result.output_dir / names["unsupported_op.csv"]
    advice_csv.write_csv(staging / names["advice.csv"], result)
    result.report_paths["advice_csv"] = result.output_dir / names["advice.csv"]
    if result.options.analyse:
        effort.write_csv(staging / names["effort.csv"], result)
        result.report_paths["effort_csv"] = result.output_dir / names["effort.csv"]
    result.report_paths["log"] = result.output_dir / names["msFmkTranspltlog.txt"]
    if result.main_rel is not None:
        launch_script.write(staging / names["run_distributed_npu.sh"], result.main_rel)
        result.report_paths["launcher"] = result.output_dir / names["run_distributed_npu.sh"]
    html_report.write(
        staging / names["report.html"], result, None if result.options.analyse else staging
    )
    result.report_paths["html"] = result.output_dir / names["report.html"]
    log.write(staging / names["msFmkTranspltlog.txt"], result)
