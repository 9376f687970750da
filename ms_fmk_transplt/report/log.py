"""msFmkTranspltlog.txt: the timestamped, levelled log of the run."""

from __future__ import annotations

import traceback
from datetime import datetime
from pathlib import Path

from ms_fmk_transplt import __version__
from ms_fmk_transplt.events import FileStatus, Severity
from ms_fmk_transplt.records import RunResult
from ms_fmk_transplt.report import library_api
from ms_fmk_transplt.report.statistics import (
    COUNT_LABELS,
    FRAMEWORK_NAMES,
    caveat_split,
    framework_counts,
    framework_line,
    need_manual_work,
    rule_counts,
    run_buckets,
    summary_counts,
)
from ms_fmk_transplt.safe_names import shown
from ms_fmk_transplt.safety.fs_safety import write_text

TF_TARGET = "the Ascend TF adapter (npu_bridge / npu_device)"


def _line(time: datetime, level: Severity | str, message: str) -> str:
    level_name = level.value if isinstance(level, Severity) else level
    return f"{time:%Y-%m-%d %H:%M:%S} {level_name:<7} {message}"


def target_version(result: RunResult) -> str:
    """The torch_npu version the output targets (-v, resolved; the newest known by default)."""
    return result.tables.torch_npu_version


def target_line(result: RunResult) -> str:
    how = "-v" if result.options.target_version else "the newest known; choose with -v"
    line = f"torch_npu {target_version(result)} ({how}) on the matching PyTorch"
    if framework_counts(result.files):
        line += f"; TensorFlow files: {TF_TARGET}"
    return line


def target_label(result: RunResult) -> str:
    """What the output targets, short: ``torch_npu 2.14.0``, with the TF adapter when the run
    has TensorFlow files."""
    counts = framework_counts(result.files)
    torch_work = [c for c in counts if c.name != FRAMEWORK_NAMES["tensorflow"] and c.buckets.total]
    if counts and not torch_work:  # no PyTorch file has anything to migrate
        return TF_TARGET
    torch = f"torch_npu {target_version(result)}"
    return f"{torch} + {TF_TARGET}" if counts else torch


def lines(result: RunResult) -> list[str]:
    end = result.finished or datetime.now()
    return _head(result) + _file_lines(result) + _tail(result, end)


def _head(result: RunResult) -> list[str]:
    opts = result.options
    out = [
        _line(result.started, "INFO", f"ms_fmk_transplt {__version__} started"),
        _line(
            result.started,
            "INFO",
            f"input: {shown(opts.input)} -> output: {shown(result.output_dir)}",
        ),
        _line(result.started, "INFO", f"target: {target_line(result)}"),
    ]
    if opts.config_file:  # options from [tool.ms_fmk_transplt] (none: no line)
        config = f"configuration: {shown(opts.config_file)} [tool.ms_fmk_transplt]"
        out.append(_line(result.started, "INFO", config))
    if result.tables.operators.note:  # once here and in the workbook's Summary, not per row
        note = f"operator support: {result.tables.operators.note}"
        out.append(_line(result.started, "INFO", note))
    numbering = (
        "analysis only: no code written; line numbers are those of the input files"
        if opts.analyse
        else "line numbers are those of the migrated files (as in change_list.csv, "
        "unsupported_op.xlsx/.csv, advice.csv and report.html)"
    )
    out.append(_line(result.started, "INFO", numbering))
    for severity, message in result.notes:
        out.append(_line(result.started, severity, message))
    return out


def _file_lines(result: RunResult) -> list[str]:
    out: list[str] = []
    for record in result.files:
        if not record.python:
            continue
        if record.status == FileStatus.CHANGED:
            what = f"{len(record.events)} change(s)"
        elif record.status == FileStatus.UNCHANGED:
            what = "nothing to migrate" if record.analysed else "nothing to migrate (pre-filter)"
        elif record.status == FileStatus.SKIPPED:
            what = "skipped, copied unchanged"
        else:
            what = "FAILED, copied unchanged"
        out.append(_line(record.time, "INFO", f"analysed {shown(record.path)}: {what}"))
        migrated = not result.options.analyse
        for notice in sorted(record.notices, key=lambda n: n.lines(migrated)):
            out.append(
                _line(
                    record.time,
                    notice.severity,
                    f"{shown(notice.file)}:{notice.lines(migrated)[0]}: [{notice.rule}] "
                    f"{notice.message}",
                )
            )
    return out


def _tail(result: RunResult, end: datetime) -> list[str]:
    out: list[str] = []
    counts = summary_counts(result)
    summary = ", ".join(f"{COUNT_LABELS[k].strip()} {v}" for k, v in counts.items())
    out.append(_line(end, "INFO", "summary: " + summary))
    for rule, n in rule_counts(result):
        out.append(_line(end, "INFO", f"changes by rule: {rule} {n}"))
    frameworks = framework_counts(result.files)
    if frameworks:
        out.append(_line(end, "INFO", framework_line(frameworks)))
    b = run_buckets(result)
    out.append(
        _line(
            end,
            "INFO",
            f"{b.items_line(result.options.analyse)}: {need_manual_work(b.manual)}, "
            f"{b.caveat} caveats to check ({caveat_split(b)}), {b.automatic} migrated without "
            "a caveat (details in unsupported_op.xlsx)",
        )
    )
    out.extend(_line(end, "INFO", line) for line in library_api.summary_lines(result))
    seconds = (end - result.started).total_seconds()
    if counts["failed"]:
        out.append(
            _line(
                end,
                "ERROR",
                f"finished in {seconds:.2f}s with {counts['failed']} failed "
                f"file(s) (copied unchanged); output in {shown(result.output_dir)}",
            )
        )
    else:
        out.append(
            _line(
                end,
                "INFO",
                f"migration completed successfully in {seconds:.2f}s; "
                f"output in {shown(result.output_dir)}",
            )
        )
    return out


def write(path: Path, result: RunResult) -> None:
    write_text(path, "\n".join(lines(result)) + "\n", errors="backslashreplace")


def write_stopped(
    path: Path, result: RunResult, reason: str, exc: BaseException | None = None
) -> None:
    """The log of a run that did not finish: what was done before it stopped, and why nothing
    was kept. Written beside the output folder it did not create."""
    end = datetime.now()
    out = _head(result) + _file_lines(result)
    if exc is not None:
        trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=8))
        out.append(_line(end, "ERROR", trace.rstrip()))
    out.append(
        _line(
            end,
            "ERROR",
            f"run {reason} after {len(result.files)} of {result.total_files} files "
            f"({(end - result.started).total_seconds():.2f}s): nothing was kept (the partial "
            f"output was removed; {shown(result.output_dir)} is as it was before the run) and the "
            "input was not modified. Run the same command again to migrate.",
        )
    )
    write_text(path, "\n".join(out) + "\n", errors="backslashreplace")
