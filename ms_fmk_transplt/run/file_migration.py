"""One file migrated as the tool would: read, looked up in the cache, migrated by the engine (a
notebook cell by cell), and isolated: a file the engine fails on is copied unchanged and
reported (engine.internal_error), the run goes on."""

from __future__ import annotations

import traceback
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ms_fmk_transplt.engine import EngineOptions, migrate_source
from ms_fmk_transplt.engine.options import DEFAULT_OPTIONS
from ms_fmk_transplt.engine.rules.family_exports import INTERNAL_ERROR, LIMIT
from ms_fmk_transplt.engine.skipped_file import skipped
from ms_fmk_transplt.errors import INTERRUPTED, UserError
from ms_fmk_transplt.events import FileStatus, Notice, Severity
from ms_fmk_transplt.records import FileRecord
from ms_fmk_transplt.run.file_deadline import FileTimeout, deadline
from ms_fmk_transplt.run.record_codec import Malformed, record_from_plain, record_to_plain
from ms_fmk_transplt.safety.regular_files import read_regular
from ms_fmk_transplt.tables import Tables

if TYPE_CHECKING:  # (a run's cache: the path modes have none)
    from ms_fmk_transplt.scan.cache import Cache


def migrate_file(
    source_path: Path,
    rel: str,
    tables: Tables,
    options: EngineOptions | None = None,
    cache: Cache | None = None,
) -> tuple[bytes, FileRecord]:
    """The output (the bytes read, unless the file changed) and the record of one file.
    ``tables``: the target version's, handed down by the run (for ``options``)."""
    data = _read(source_path)
    now = datetime.now()
    key = cache.key(rel, data) if cache is not None else None
    if cache is not None and key is not None:
        hit = _from_cache(cache, key, rel, data, now)
        if hit is not None:
            return hit
    seconds = (options or DEFAULT_OPTIONS).file_seconds
    try:
        with deadline(seconds):
            if source_path.suffix == ".ipynb":
                from ms_fmk_transplt.run.notebook import migrate_notebook  # (a notebook only)

                result = migrate_notebook(data, rel, tables, options)
            else:
                result = migrate_source(data, rel, tables, options)
    except FileTimeout as exc:  # not cached: another run may well finish it
        message = f"{exc} (--file-timeout); copied unchanged"
        skip = skipped(rel, data, 1, LIMIT, message, tables)
        return data, FileRecord(rel, skip.status, True, True, now, notices=skip.notices)
    except BaseException as exc:  # noqa: BLE001 - per-file isolation: log, copy unchanged, go on
        # (BaseException: a panic in LibCST's native parser arrives as pyo3's PanicException,
        # which is not an Exception)
        if isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit)):
            raise
        if INTERRUPTED.is_set() or _while_interrupted(exc):
            raise KeyboardInterrupt from exc
        tb = traceback.format_exc(limit=6)
        message = f"internal error, file copied unchanged: {type(exc).__name__}: {exc}\n{tb}"
        return data, failed_record(rel, message, tables, now)
    record = FileRecord(
        rel,
        result.status,
        True,
        result.analysed,
        now,
        result.events,
        result.notices,
        timings=result.timings,
        libcst_stages=result.libcst_stages,
        framework=result.framework,
    )
    changed = result.status == FileStatus.CHANGED
    if cache is not None and key is not None:
        cache.put(key, record_to_plain(record), result.output if changed else None)
    return (result.output if changed else data), record  # unchanged: the very bytes read


def _from_cache(
    cache: Cache, key: str, rel: str, data: bytes, now: datetime
) -> tuple[bytes, FileRecord] | None:
    """The output and record of a cache hit; None for a miss, and for an entry that is not
    exactly what a run of this file stores (the file is migrated again, the entry rewritten)."""
    entry = cache.get(key)
    if entry is None:
        return None
    try:
        record = record_from_plain(entry.value, rel, now)
    except Malformed:
        return None
    if (entry.payload is not None) != (record.status == FileStatus.CHANGED):
        return None  # the output is stored exactly when the file changed
    record.cached = True
    return (data if entry.payload is None else entry.payload), record


def failed_record(
    rel: str, message: str, tables: Tables, now: datetime | None = None
) -> FileRecord:
    """The record of a file the engine failed on (engine.internal_error, failed_file row)."""
    failed = tables.unsupported.failed_file
    notice = Notice.of_entry((rel, 1), INTERNAL_ERROR, Severity.ERROR, message, failed)
    return FileRecord(rel, FileStatus.FAILED, True, True, now or datetime.now(), notices=[notice])


def _read(path: Path) -> bytes:
    try:
        return read_regular(path)  # never a FIFO or device that replaced the file
    except OSError as exc:
        if INTERRUPTED.is_set() or _while_interrupted(exc):
            raise KeyboardInterrupt from exc  # the signal's, not a file that cannot be read
        raise UserError(path, f"cannot read this file ({exc.strerror})") from exc


def _while_interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while a KeyboardInterrupt unwound (in a ``finally`` or an
    ``except`` it passed through): the interrupt, not a failure of the file."""
    seen: set[int] = set()
    link: BaseException | None = exc.__context__
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return True
        seen.add(id(link))
        link = link.__context__
    return False
