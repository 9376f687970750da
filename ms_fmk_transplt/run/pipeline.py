"""The run: discover files -> migrate each (engine) -> write the output tree -> reports.

Output is assembled in a hidden sibling folder and moved into place at the end, so a
``<name>_msft`` folder only ever appears complete. The input tree is only read.
"""

from __future__ import annotations

import dataclasses
import os
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from ms_fmk_transplt import clock
from ms_fmk_transplt.engine import EngineOptions
from ms_fmk_transplt.engine.library_facts import LibraryFacts
from ms_fmk_transplt.engine.project_facts import ProjectFacts
from ms_fmk_transplt.errors import Interrupted, UserError
from ms_fmk_transplt.events import Severity
from ms_fmk_transplt.records import ProgressSink, RunOptions, RunResult
from ms_fmk_transplt.report.report_cache import ReportCache
from ms_fmk_transplt.run import main_script, run_folds, shards
from ms_fmk_transplt.run.engine_options import engine_options
from ms_fmk_transplt.run.npu_option_notes import npu_option_notes
from ms_fmk_transplt.run.record_codec import run_digest
from ms_fmk_transplt.run.staging import (
    assemble,
    check_output_name,
    signals_interrupt,
    stopped_early,
)
from ms_fmk_transplt.scan.assess_results import read_assessed
from ms_fmk_transplt.scan.cache import Cache, default_dir, fingerprint
from ms_fmk_transplt.scan.discover import (
    ANALYSIS_SUFFIX,
    OUTPUT_SUFFIX,
    Project,
    output_dir_for,
    resolve_project,
)
from ms_fmk_transplt.tables import Tables, load_tables
from ms_fmk_transplt.user_options.option_schema import RESULT_FIELDS


def output_dir(project: Project, options: RunOptions) -> Path:
    """``<name>_msft`` (``_analysis``; a kit's tree: its own name) in the output folder."""
    final_dir = output_dir_for(
        project, options.output, ANALYSIS_SUFFIX if options.analyse else OUTPUT_SUFFIX
    )
    return final_dir.with_name(options.output_name) if options.output_name else final_dir


def _part_dir(final_dir: Path, options: RunOptions) -> Path:
    """Where this run writes: ``final_dir``, or for --shard I/N its part's own folder."""
    if options.shard is None:
        return final_dir
    return final_dir.with_name(final_dir.name + shards.suffix(options.shard))


def check_not_there(final_dir: Path, options: RunOptions) -> None:
    """An existing output is replaced with --overwrite only."""
    if os.path.lexists(final_dir) and not options.overwrite:
        raise UserError(final_dir, "already exists; pass --overwrite to replace it")


def run(options: RunOptions, progress: ProgressSink | None = None) -> RunResult:
    """The run; Ctrl-C and SIGTERM stop it from its first step (not only once its output is
    being assembled) with exit 130, one line and its interrupted.log."""
    with signals_interrupt():
        tables: Tables | None = None
        try:
            tables = load_tables(options.target_version)  # once per run, handed down from here
            result, parts = _assembled(options, tables, progress)
        except Interrupted:
            raise
        except KeyboardInterrupt as exc:  # before the staging folder existed
            raise Interrupted(_early_log(options, tables)) from exc
    shards.remove_parts(parts)  # (--merge-shards: once the merged output is in place)
    return result


def _early_log(options: RunOptions, tables: Tables | None) -> Path | None:
    """The log of a run interrupted before it assembled anything (reading the input, scanning
    the project, checking the parts to merge); None when it cannot be written."""
    if tables is None:  # (interrupted in its first tenth of a second)
        return None
    try:
        project = resolve_project(options.input)
        final_dir = _part_dir(output_dir(project, options), options)
        return stopped_early(RunResult(options, project, final_dir, datetime.now(), tables))
    except Exception:  # (a bad input would have been reported by the run)
        return None


def _assembled(
    options: RunOptions, tables: Tables, progress: ProgressSink | None
) -> tuple[RunResult, list[tuple[Path, dict[str, Any]]]]:
    """The run's output in place, and the parts it merged (--merge-shards; none otherwise)."""
    engine = engine_options(options, tables)
    project = resolve_project(options.input)
    main_rel = entry_rel = main_script.main_file(project, options)
    if options.kit_loop:  # the kit's calls go into the trainer module, the launcher runs -m
        looped = dataclasses.replace(options, main_script=options.kit_loop)
        main_rel = main_script.main_file(project, looped, "--loop")
    final_dir = output_dir(project, options)
    deps_log: list[str] = []
    project = _beside_the_cache(project, cache_root(options), final_dir)
    if options.shard is not None:
        shards.check_records_name(project.root, project.single_file is not None)
    final_dir = _part_dir(final_dir, options)
    check_output_name(final_dir)
    check_not_there(final_dir, options)
    started = clock.take()  # (the command's start-up, the scan and --deps are part of its time)
    if not options.merge_shards:  # what the files define for each other (CUDA-only code)
        from ms_fmk_transplt.scan.project_scan import scan_project  # (not for --check)

        facts = scan_project(project, tables, _facts_cache(options))
        if options.deps:  # the installed libraries it imports (library_analysis.py)
            facts, deps_log = _with_deps(project, facts, options, tables)
        if options.assessed:  # what kit assess saw the training steps run
            assessed, assessed_log = read_assessed(options.assessed, project.root)
            facts = dataclasses.replace(facts, assessed=assessed)
            deps_log.extend(assessed_log)
        engine = dataclasses.replace(engine, project=facts)
    library: tuple[LibraryFacts, ...] = ()
    if options.library:  # the input read as a library too (library_mode.py)
        library, library_log = _library(project, options, tables)
        deps_log.extend(library_log)
    if options.merge_shards:
        parts = shards.load_parts(final_dir, options.merge_shards)
        started = min(datetime.fromisoformat(data["started"]) for _, data in parts)
    main_result = None
    if main_rel is not None and not options.merge_shards:  # fails before anything is created
        main_result = main_script.migrate_main(
            project, main_rel, engine, options, tables, entry_rel
        )
    notes: list[tuple[Severity, str]] = [(Severity.INFO, line) for line in deps_log]
    if engine.project is not None:  # a module both TF 1.x and TF 2.x programs import
        notes.extend((Severity.WARNING, n) for n in engine.project.programs.notes())
    if main_rel is not None:
        notes.extend(main_script.main_notes(main_result))
    result = RunResult(
        options,
        project,
        final_dir,
        started,
        tables,
        engine=engine,
        main_rel=main_rel,
        main_result=main_result,
        kit_entry=entry_rel if main_rel is not None and options.kit else None,
        notes=notes,
        fingerprint=result_fingerprint(options, engine, tables),
        library=library,
    )
    if options.merge_shards:
        return assemble(result, lambda staging, run: _merge_parts(parts, staging, run)), parts
    built = assemble(
        result, lambda staging, run: _migrate_and_report(project, staging, run, progress)
    )
    return built, []


def _with_deps(
    project: Project, facts: ProjectFacts, options: RunOptions, tables: Tables
) -> tuple[ProjectFacts, list[str]]:
    """The facts with what the installed libraries the project imports reach (--deps)."""
    from ms_fmk_transplt.run.library_analysis import analyse_dependencies, project_sources

    deps, log = analyse_dependencies(
        options.deps,
        project_sources(project),
        facts.own_modules,
        tables,
        _facts_cache(options),
        options.jobs or os.cpu_count() or 1,
    )
    return dataclasses.replace(facts, deps=deps), log


def _library(
    project: Project, options: RunOptions, tables: Tables
) -> tuple[tuple[LibraryFacts, ...], list[str]]:
    """--library: the input's packages, with what of each reaches CUDA-specific code."""
    from ms_fmk_transplt.run.library_mode import analyse_library

    jobs = options.jobs or os.cpu_count() or 1
    return analyse_library(project, tables, _facts_cache(options), jobs)


def _migrate_and_report(
    project: Project, staging: Path, result: RunResult, progress: ProgressSink | None
) -> RunResult:
    # imported here, not with the module: --check/--diff/--inplace use engine_options only,
    # and never need the worker pool or the reports (openpyxl)
    from ms_fmk_transplt.report.all_reports import write_reports
    from ms_fmk_transplt.run.tree_migration import migrate_tree

    cache = _make_cache(result.options, result.fingerprint)
    migrate_tree(project, staging, result, cache, progress)
    if result.options.shard is None:  # (a part's files are not the run's: said by the merge)
        result.notes.extend(npu_option_notes(result))
    start = time.perf_counter()
    reported, fold_notes = run_folds.folded(result)
    reported = write_reports(staging, reported, _report_cache(cache, reported))
    reported.timings["reports"] = time.perf_counter() - start
    if result.options.shard is not None:  # each file's own rows: the merge folds them all
        kept = [note for note in reported.notes if note not in fold_notes]
        records = dataclasses.replace(reported, files=result.files, notes=kept)
        shards.write_records(staging / shards.RECORDS, records, result.options.shard, result.order)
    return reported


def _merge_parts(
    parts: list[tuple[Path, dict[str, Any]]], staging: Path, result: RunResult
) -> RunResult:
    """--merge-shards: the files of every part, and the reports of all their records."""
    from ms_fmk_transplt.report.all_reports import write_reports

    items = sorted((item for _, data in parts for item in data["files"]), key=lambda i: i["index"])
    result.files.extend(shards.file_record(item) for item in items)
    for _, data in parts:
        for severity, message in data["notes"]:
            if (Severity(severity), message) not in result.notes:
                result.notes.append((Severity(severity), message))
    result.notes.extend(npu_option_notes(result))
    if not result.options.analyse:
        shards.gather(parts, staging)
    return write_reports(staging, run_folds.folded(result)[0])


def result_fingerprint(options: RunOptions, engine: EngineOptions, tables: Tables) -> str:
    """Everything besides the files that decides a run's results: the value of every option
    the schema says changes them (``option_schema.RESULT_FIELDS``: an option declared there is
    in it without being listed here; --max-file-size was once missing, and a warm cache
    migrated a file the limit skips), the -r file's text, the target's tables and the
    project's facts. The cache's entries are keyed by it; the parts of a sharded run must agree
    on it. (The engine options are made from these alone: tests/test_option_schema.py.)"""
    from ms_fmk_transplt.scan.project_scan import facts_fingerprint  # (not for --check)

    rules = engine.user_rules
    values = [f"{name}={getattr(options, name)!r}" for name in RESULT_FIELDS]
    extra = "|".join(
        [
            Path(rules.path).read_text(encoding="utf-8") if rules else "",
            tables.torch_npu_version,
            facts_fingerprint(engine.project),
            *values,
        ]
    )
    return fingerprint(extra)


def cache_root(options: RunOptions) -> Path | None:
    """The cache folder of a run (None: --no-cache)."""
    if not options.use_cache:
        return None
    return Path(options.cache_dir) if options.cache_dir else default_dir()


def check_cache_folder(folder: Path | None) -> None:
    """Exit 2 when the cache folder is (or is under) something else than a folder: a cache
    that cannot be written would only cost speed, silently."""
    if folder is None:
        return
    where = Path(os.path.realpath(folder))
    there = next(p for p in (where, *where.parents) if os.path.lexists(p))
    if not there.is_dir():
        what = "is not a folder" if there == where else f"is under {there}, which is not a folder"
        raise UserError(
            folder,
            f"{what}: the cache needs a folder; choose another --cache-dir or pass --no-cache",
        )


def _beside_the_cache(project: Project, cache_root: Path | None, final_dir: Path) -> Project:
    """The cache folder against the input and the output: inside the input it is left out of
    the files (never copied into the output); where the run replaces or removes folders (the
    output folder, its shard parts, the hidden working folders beside it) it is refused."""
    if cache_root is None:
        return project
    check_cache_folder(cache_root)
    where = Path(os.path.realpath(cache_root))
    if project.single_file is None and where == project.root:
        raise UserError(cache_root, "the cache folder must not be the input folder itself")
    parent, name = final_dir.parent, final_dir.name
    if parent in where.parents:
        head = where.relative_to(parent).parts[0]
        if head == name or head.startswith((name + ".", "." + name + ".")):
            raise UserError(
                cache_root,
                f"the cache folder must not be inside the output {final_dir}: runs "
                "replace that folder; choose another --cache-dir",
            )
    if project.root in where.parents:
        return dataclasses.replace(project, skip=where)
    return project


def _facts_cache(options: RunOptions) -> Cache | None:
    """The cache of the project facts: they decide the engine's fingerprint, so their own
    entries depend only on the tool, its tables and the target version."""
    root = cache_root(options)
    if root is None:
        return None
    return Cache(root, fingerprint("project facts|" + options.target_version))


def _report_cache(cache: Cache | None, result: RunResult) -> ReportCache | None:
    """Where the workbook and the page of an earlier run with the same records are kept."""
    digest = run_digest(result) if cache is not None else None
    return None if cache is None or digest is None else ReportCache(cache, digest)


def _make_cache(options: RunOptions, run_fingerprint: str) -> Cache | None:
    root = cache_root(options)
    if root is None:
        return None
    return Cache(root, run_fingerprint)
