"""The run: discover files -> migrate each (engine) -> write the output tree -> reports.

Output is assembled in a hidden sibling folder and moved into place at the end, so a
``<name>_msft`` folder only ever appears complete. The input tree is only read.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import shutil
import signal
import threading
import traceback
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ms_fmk_transplt.cache import Cache, default_dir, fingerprint
from ms_fmk_transplt.discover import (
    ANALYSIS_SUFFIX,
    OUTPUT_SUFFIX,
    Project,
    output_dir_for,
    resolve_project,
)
from ms_fmk_transplt.engine import EngineOptions, migrate_source
from ms_fmk_transplt.errors import UserError
from ms_fmk_transplt.events import ChangeEvent, FileStatus, Notice, Severity
from ms_fmk_transplt.notebook import migrate_notebook
from ms_fmk_transplt.report.names import report_names
from ms_fmk_transplt.tables import load_tables
from ms_fmk_transplt.user_rules import load_user_rules


@dataclass
class RunOptions:
    input: str
    output: str
    overwrite: bool = False
    analyse: bool = False  # reports only: no code is written
    rule_file: str | None = None  # -r/--rule
    specify_device: bool = False  # -s/--specify-device
    similar: bool = False  # -sim/--similar
    max_file_mib: float = 5.0  # --max-file-size
    jobs: int = 0  # worker processes (0: one per core)
    cache_dir: str | None = None  # None: the default location (see cache.py)
    use_cache: bool = True
    distributed_main: str | None = None  # distributed -m MAIN
    distributed_target: str = "model"  # distributed -t MODEL


@dataclass
class FileRecord:
    path: str  # relative to the project root, with forward slashes
    status: FileStatus
    python: bool
    analysed: bool
    time: datetime
    events: list[ChangeEvent] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    cached: bool = False


@dataclass
class RunResult:
    options: RunOptions
    project: Project
    output_dir: Path
    started: datetime
    finished: datetime | None = None
    files: list[FileRecord] = field(default_factory=list)
    report_paths: dict[str, Path] = field(default_factory=dict)
    engine: EngineOptions = field(default_factory=EngineOptions)
    main_rel: str | None = None  # distributed mode: the -m file, relative to the project root
    main_result: tuple[bytes, FileRecord] | None = None
    notes: list[tuple[Severity, str]] = field(default_factory=list)  # run-level log lines

    @property
    def events(self) -> list[ChangeEvent]:
        return [e for f in self.files for e in f.events]

    @property
    def notices(self) -> list[Notice]:
        return [n for f in self.files for n in f.notices]

    def count(self, status: FileStatus, python: bool | None = None) -> int:
        return sum(
            1 for f in self.files if f.status == status and (python is None or f.python == python)
        )


def _rel(path: Path) -> str:
    return path.as_posix()


def engine_options(options: RunOptions) -> EngineOptions:
    """Validates what the user asked for (-r file) before anything is written."""
    rules = load_user_rules(options.rule_file) if options.rule_file else None
    return EngineOptions(
        user_rules=rules,
        specify_device=options.specify_device,
        similar=options.similar,
        max_file_bytes=int(options.max_file_mib * 2**20),
    )


def migrate_file(
    source_path: Path, rel: str, options: EngineOptions | None = None, cache: Cache | None = None
) -> tuple[bytes, FileRecord]:
    data = _read(source_path)
    now = datetime.now()
    key = cache.key(rel, data) if cache is not None else None
    if key is not None:
        hit = cache.get(key)
        if hit is not None:
            output, record = hit
            return output, dataclasses.replace(record, time=now, cached=True)
    tables = load_tables()
    try:
        if source_path.suffix == ".ipynb":
            result = migrate_notebook(data, rel, tables, options)
        else:
            result = migrate_source(data, rel, tables, options)
    except Exception as exc:  # noqa: BLE001 - per-file isolation: log, copy unchanged, go on
        if INTERRUPTED.is_set():
            raise KeyboardInterrupt from exc
        tb = traceback.format_exc(limit=6)
        failed = tables.unsupported.failed_file
        notice = Notice(
            rel,
            1,
            "engine.internal_error",
            Severity.ERROR,
            f"internal error, file copied unchanged: {type(exc).__name__}: {exc}\n{tb}",
            api=failed.key,
            category=failed.category,
            action=failed.action,
            tip=failed.tip,
        )
        return data, FileRecord(rel, FileStatus.FAILED, True, True, now, notices=[notice])
    record = FileRecord(
        rel, result.status, True, result.analysed, now, result.events, result.notices
    )
    if key is not None:
        cache.put(key, (result.output, record))
    return result.output, record


def _work(task: tuple[str, str, EngineOptions, Cache | None]) -> tuple[bytes, FileRecord]:
    """Pool worker: one file (its bytes travel back once, to be written by the parent)."""
    path, rel, options, cache = task
    return migrate_file(Path(path), rel, options, cache)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UserError(path, f"cannot read this file ({exc.strerror})") from exc


def _copy_entry(src: Path, dst: Path) -> None:
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
        return
    try:
        shutil.copy2(src, dst)
    except OSError as exc:
        culprit = exc.filename if exc.filename else src
        problem = "cannot read this file" if str(culprit) == str(src) else "cannot write"
        raise UserError(culprit, f"{problem} ({exc.strerror})") from exc


def run(options: RunOptions, progress=None) -> RunResult:
    engine = engine_options(options)
    project = resolve_project(options.input)
    main_rel = _distributed_main(project, options)
    final_dir = output_dir_for(
        project, options.output, ANALYSIS_SUFFIX if options.analyse else OUTPUT_SUFFIX
    )
    if final_dir.exists() and not options.overwrite:
        raise UserError(final_dir, "already exists; pass --overwrite to replace it")
    started = datetime.now()
    main_result = None
    if main_rel is not None:  # fails before anything is created when -m is unusable
        main_result = _migrate_main(project, main_rel, engine, options.distributed_target)
    parent = final_dir.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(parent, f"cannot create the output folder ({exc.strerror})") from exc
    if not os.access(parent, os.W_OK):
        raise UserError(parent, "output folder is not writable")

    result = RunResult(options, project, final_dir, started, engine=engine)
    if main_rel is not None:
        result.main_rel, result.main_result = main_rel, main_result
    staging = parent / f".{final_dir.name}.partial-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    previous = _terminate_as_interrupt()
    try:
        staging.mkdir()
        _migrate_tree(project, staging, result, progress)
        _write_reports(staging, result)
        _move_into_place(staging, final_dir, result)
    finally:
        if staging.exists():  # interrupted or failed: never leave a half-written tree
            shutil.rmtree(staging, ignore_errors=True)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
            signal.signal(signal.SIGINT, signal.default_int_handler)
    return result


INTERRUPTED = threading.Event()


def _terminate_as_interrupt():
    """Ctrl-C and SIGTERM stop the run, so the staging folder is always removed. The flag makes
    it stick even when the signal lands inside native parser code that turns it into an ordinary
    exception (which per-file isolation would otherwise record as a failed file)."""
    INTERRUPTED.clear()
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        INTERRUPTED.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    return signal.signal(signal.SIGTERM, handler)


def _cuda_source_notice(src: Path, rel: str) -> Notice:
    entry = load_tables().unsupported.cuda_file
    with src.open("rb") as fh:
        lines = sum(1 for _ in fh)
    return Notice(
        rel,
        1,
        load_tables().unsupported.rule,
        Severity.WARNING,
        "CUDA source file: cannot run on the NPU",
        api=src.name,
        category=entry.category,
        action=entry.action,
        tip=entry.tip,
        end_line=max(1, lines),
    )


def _make_cache(options: RunOptions, engine: EngineOptions) -> Cache | None:
    if not options.use_cache:
        return None
    root = Path(options.cache_dir) if options.cache_dir else default_dir()
    if root is None:
        return None
    rules = engine.user_rules
    extra = "|".join(
        [
            Path(rules.path).read_text(encoding="utf-8") if rules else "",
            str(engine.specify_device),
            str(engine.similar),
        ]
    )
    return Cache(root, fingerprint(extra))


def _entries(project: Project):
    for rel_path in project.files():
        src = project.root / rel_path
        code = src.suffix in (".py", ".ipynb")
        yield rel_path, src, code and src.is_file() and not src.is_symlink()


def _migrate_tree(project: Project, staging: Path, result: RunResult, progress=None) -> None:
    write = not result.options.analyse
    cuda_suffixes = load_tables().unsupported.cuda_file_suffixes
    cache = _make_cache(result.options, result.engine)
    entries = list(_entries(project))  # paths only: contents are streamed
    python = [
        (str(src), rel_path.as_posix(), result.engine, cache)
        for rel_path, src, is_py in entries
        if is_py and rel_path.as_posix() != result.main_rel
    ]
    if progress is not None:
        progress.start(len(entries))
    migrated = _migrated(python, result.options.jobs)
    for rel_path, src, is_py in entries:
        if INTERRUPTED.is_set():
            raise KeyboardInterrupt
        dst = staging / rel_path
        rel = rel_path.as_posix()
        if write:
            dst.parent.mkdir(parents=True, exist_ok=True)
        if rel == result.main_rel and result.main_result is not None:
            output, record = result.main_result
        elif is_py:
            output, record = next(migrated)
            assert record.path == rel
        else:
            if write:
                _copy_entry(src, dst)
            record = FileRecord(rel, FileStatus.UNCHANGED, False, False, datetime.now())
            if src.is_file() and not src.is_symlink() and src.suffix in cuda_suffixes:
                record.notices.append(_cuda_source_notice(src, rel))
            output = None
        if output is not None and write:
            dst.write_bytes(output)
            shutil.copystat(src, dst)
        result.files.append(record)
        if progress is not None:
            progress.advance(record)


def _migrated(tasks: list, jobs: int):
    """Migration results in task order; a process pool for large trees."""
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(tasks) < 16:
        yield from map(_work, tasks)
        return
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with context.Pool(min(jobs, len(tasks))) as pool:
        yield from pool.imap(_work, tasks, chunksize=4)


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
    raise UserError(
        options.distributed_main, f"distributed -m: not a .py file of the input {project.root}"
    )


def _migrate_main(
    project: Project, main_rel: str, engine: EngineOptions, target: str
) -> tuple[bytes, FileRecord]:
    options = dataclasses.replace(engine, distributed_target=target)
    output, record = migrate_file(project.root / main_rel, main_rel, options)
    notice = load_tables().section("distributed_mode")["no_dataloader_notice"]
    if record.status in (FileStatus.SKIPPED, FileStatus.FAILED):
        raise UserError(
            main_rel,
            "distributed -m: the file cannot be migrated (see a run "
            "without distributed); nothing written",
        )
    if any(n.rule == notice for n in record.notices):
        raise UserError(
            main_rel,
            "distributed -m: no torch.utils.data.DataLoader in this file, "
            "the distributed mode shards a DataLoader; nothing written",
        )
    return output, record


def _write_reports(staging: Path, result: RunResult) -> None:
    from ms_fmk_transplt.report import change_list, launcher, log, unsupported

    user_files = {f.path for f in result.files}
    names = report_names(user_files, distributed=result.main_rel is not None)
    for key, name in names.items():
        if name != key:
            result.notes.append(
                (Severity.WARNING, f"the project has its own {key}; this run's report is {name}")
            )
    result.finished = datetime.now()
    change_list.write(staging / names["change_list.csv"], result)
    result.report_paths["change_list"] = result.output_dir / names["change_list.csv"]
    unsupported.write_xlsx(staging / names["unsupported_op.xlsx"], result)
    unsupported.write_csv(staging / names["unsupported_op.csv"], result)
    result.report_paths["unsupported"] = result.output_dir / names["unsupported_op.xlsx"]
    result.report_paths["unsupported_csv"] = result.output_dir / names["unsupported_op.csv"]
    result.report_paths["log"] = result.output_dir / names["msFmkTranspltlog.txt"]
    if result.main_rel is not None:
        launcher.write(staging / names["run_distributed_npu.sh"], result.main_rel)
        result.report_paths["launcher"] = result.output_dir / names["run_distributed_npu.sh"]
    log.write(staging / names["msFmkTranspltlog.txt"], result)


def _move_into_place(staging: Path, final_dir: Path, result: RunResult) -> None:
    if final_dir.exists():  # --overwrite: replace only that folder
        trash = final_dir.parent / f".{final_dir.name}.old-{os.getpid()}"
        os.replace(final_dir, trash)
        os.replace(staging, final_dir)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.replace(staging, final_dir)
