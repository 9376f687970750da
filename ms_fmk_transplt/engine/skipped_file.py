"""The result for a file the engine copies unchanged (rules parse.*): a skipped_file row."""

from __future__ import annotations

from ms_fmk_transplt.events import FileResult, FileStatus, Notice, Severity
from ms_fmk_transplt.tables import Tables


def skipped(
    path: str,
    source: bytes,
    line: int,
    rule: str,
    message: str,
    tables: Tables,
    newer_python: bool = False,
) -> FileResult:
    """The result for a file that is copied unchanged: a skipped_file row of the report (its
    tip for a file in the syntax of a newer Python: ``newer_python``)."""
    unsupported = tables.unsupported
    entry = unsupported.newer_python_file if newer_python else unsupported.skipped_file
    notice = Notice.of_entry((path, line), rule, Severity.WARNING, message, entry)
    return FileResult(path, FileStatus.SKIPPED, source, notices=[notice])
