"""Every report of a run written into the staging folder, under the names report/names.py
gives them (a project's own file of the same name is never overwritten)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import multiprocessing
import os
import signal
import sys
from collections.abc import Iterator
from datetime import datetime
from multiprocessing.process import BaseProcess
from pathlib import Path

from ms_fmk_transplt.events import Severity
from ms_fmk_transplt.records import RunResult
from ms_fmk_transplt.report import (
    advice_csv,
    change_list,
    effort,
    html_report,
    kit_files,
    launch_script,
    library_api,
    log,
    unsupported_op,
)
from ms_fmk_transplt.report.kit_files import README, root_files
from ms_fmk_transplt.report.names import report_names
from ms_fmk_transplt.report.report_cache import ReportCache
from ms_fmk_transplt.safety.fs_safety import remove_temporaries, write_file


def write_reports(staging: Path, result: RunResult, cache: ReportCache | None = None) -> RunResult:
    """Every report of ``result`` into ``staging``; the result as they describe it (finished
    now, their paths in ``report_paths``). ``cache``: where the workbook and the page an
    earlier run wrote for the same records are kept (report_cache.py)."""
    # the project's files, and whatever else its copy holds at the root (a link, a folder):
    # a report never takes a name that is there, so nothing is written through a link
    user_files = {f.path for f in result.files} | set(os.listdir(staging))
    kit = result.options.kit
    kit_names = (*root_files(kit, result.options.kit_gpu_side), README) if kit else ()
    names = report_names(
        user_files,
        distributed=result.main_rel is not None and not kit,
        analyse=result.options.analyse,
        library=result.options.library,
        kit_files=kit_names,
    )
    for key, name in names.items():
        if name != key:
            result.notes.append(
                (Severity.WARNING, f"the project has its own {key}; this run's report is {name}")
            )
    result = dataclasses.replace(result, finished=datetime.now())
    change_list.write(staging / names["change_list.csv"], result)
    result.report_paths["change_list"] = result.output_dir / names["change_list.csv"]
    # the precision kit's GPU side is not migrated: no report of an NPU migration
    npu = not (kit == "precision" and result.options.kit_gpu_side)
    with _workbook(staging / names["unsupported_op.xlsx"], result, names, cache, npu):
        _the_others(staging, result, names, cache, npu)
    log.write(staging / names["msFmkTranspltlog.txt"], result)
    return result


def _the_others(
    staging: Path, result: RunResult, names: dict[str, str], cache: ReportCache | None, npu: bool
) -> None:
    """The reports besides change_list.csv, the workbook and the log."""
    kit = result.options.kit
    if npu:
        unsupported_op.write_csv(staging / names["unsupported_op.csv"], result)
        result.report_paths["unsupported"] = result.output_dir / names["unsupported_op.xlsx"]
        result.report_paths["unsupported_csv"] = result.output_dir / names["unsupported_op.csv"]
        advice_csv.write_csv(staging / names["advice.csv"], result)
        result.report_paths["advice_csv"] = result.output_dir / names["advice.csv"]
    if result.options.analyse:
        effort.write_csv(staging / names["effort.csv"], result)
        result.report_paths["effort_csv"] = result.output_dir / names["effort.csv"]
    if result.options.library:
        library_api.write_csv(staging / names[library_api.NAME], result)
        result.report_paths["library_api_csv"] = result.output_dir / names[library_api.NAME]
    result.report_paths["log"] = result.output_dir / names["msFmkTranspltlog.txt"]
    if kit:
        kit_files.write(staging, result, names)
        result.report_paths["kit_readme"] = result.output_dir / names[README]
    elif result.main_rel is not None:
        launch_script.write(staging / names["run_distributed_npu.sh"], result.main_rel)
        result.report_paths["launcher"] = result.output_dir / names["run_distributed_npu.sh"]
    if npu:
        html_report.write(
            staging / names["report.html"],
            result,
            None if result.options.analyse else staging,
            cache,
        )
        result.report_paths["html"] = result.output_dir / names["report.html"]


@contextlib.contextmanager
def _workbook(
    path: Path, result: RunResult, names: dict[str, str], cache: ReportCache | None, npu: bool
) -> Iterator[None]:
    """unsupported_op.xlsx, while the block writes the other reports: the one an earlier run
    wrote for the same records (its links name the sibling reports: their names are in the
    key), or built in a child process where one can be forked (the costliest report, built on
    the core the finished workers left; not with -j 1), else here after the block. Whatever
    stops the block or the wait for the child stops the child first: nothing writes into the
    staging folder once the run leaves it."""
    if not npu:
        yield
        return
    siblings = json.dumps(names, sort_keys=True).encode()
    kept = cache.get(path.name, siblings) if cache is not None else None
    if kept is not None:
        write_file(path, kept)
        yield
        return
    child = _forked(path, result, names["report.html"]) if result.options.jobs != 1 else None
    try:
        yield
        if child is not None:
            child.join()
    except BaseException:  # (Ctrl-C while it or the block runs: the child stops first)
        if child is not None:
            child.terminate()
            child.join()
        raise
    if child is None or child.exitcode != 0:  # (built here: its error, if any, is reported)
        _remove_temporary(path, child)
        unsupported_op.write_xlsx(path, result, names["report.html"])
    if cache is not None:
        cache.put(path.name, path.read_bytes(), siblings)


def _forked(path: Path, result: RunResult, html_name: str) -> BaseProcess | None:
    """The workbook being built by a forked child, or None where there is no fork (or only a
    start method that would pickle the run)."""
    if not sys.platform.startswith("linux"):
        return None
    child = multiprocessing.get_context("fork").Process(
        target=_build_workbook, args=(path, result, html_name), daemon=True
    )
    try:
        child.start()
    except OSError:  # (no memory or processes left for it: built here)
        return None
    return child


def _build_workbook(path: Path, result: RunResult, html_name: str) -> None:
    """In the child: Ctrl-C is the parent's (which stops it), SIGTERM ends it; a failure is
    its exit code only (the parent builds the workbook again and reports what fails)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        unsupported_op.write_xlsx(path, result, html_name)
    except BaseException:
        os._exit(1)


def _remove_temporary(path: Path, child: BaseProcess | None) -> None:
    """What a child that failed may have left: its temporary file (write_file's)."""
    if child is not None and child.pid is not None:
        remove_temporaries(path, child.pid)
