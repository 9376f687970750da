"""A file's record as plain JSON values and back: the one codec of the result cache (cache.py),
whose entries are data someone may have changed, and of a shard's part (shards.py), whose
records another run reads. Reading accepts exactly the shape written (every field of its type,
enums by value, events and notices of the file the record is for) and rejects anything else
with ``Malformed``, never half-read. The cache keeps what a file's migration decides
(``record_to_plain``); a part keeps every field (``full_record_to_plain``)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from collections.abc import Callable
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar

from ms_fmk_transplt.events import ChangeEvent, FileStatus, Notice, split_cell
from ms_fmk_transplt.records import FileRecord, RunResult

T = TypeVar("T", ChangeEvent, Notice)
_RECORD_KEYS = frozenset(
    {"path", "status", "python", "analysed", "libcst_stages", "events", "notices"}
)
# how the run got the record: a cache hit sets them, a shard's part keeps them
_RUN_KEYS = frozenset({"time", "cached", "timings"})


FRAMEWORKS = "tensorflow"  # the one value of FileRecord.framework besides ""


class Malformed(ValueError):
    """A cached value that is not exactly what record_to_plain writes."""


def record_to_plain(record: FileRecord) -> dict[str, object]:
    """What the cache keeps of a record: not its time, timings or cached flag (a hit sets
    them)."""
    return {
        "path": record.path,
        "status": record.status.value,
        "python": record.python,
        "analysed": record.analysed,
        "libcst_stages": record.libcst_stages,
        "events": [_flat_to_plain(e) for e in record.events],
        "notices": [_flat_to_plain(n) for n in record.notices],
        # only for a TensorFlow file: entries of other files read as before
        **({"framework": record.framework} if record.framework else {}),
    }


def record_from_plain(value: object, rel: str, time: datetime) -> FileRecord:
    """The record of ``rel`` from a cached value; raises Malformed for anything else."""
    if type(value) is not dict or value.keys() - {"framework"} != _RECORD_KEYS:
        raise Malformed("not a record")
    framework = value.get("framework", "")
    if framework not in ("", FRAMEWORKS):
        raise Malformed("wrong framework")
    if value["path"] != rel:
        raise Malformed("the record of another file")
    status = _enum(FileStatus, value["status"])
    python, analysed, stages = value["python"], value["analysed"], value["libcst_stages"]
    if type(python) is not bool or type(analysed) is not bool or type(stages) is not str:
        raise Malformed("wrong types")
    events = _flat_list(ChangeEvent, value["events"], rel)
    notices = _flat_list(Notice, value["notices"], rel)
    return FileRecord(
        rel,
        status,
        python,
        analysed,
        time,
        events,
        notices,
        libcst_stages=stages,
        framework=framework,
    )


def full_record_to_plain(record: FileRecord) -> dict[str, object]:
    """Every field of a record (a shard's part): the cache's form, and when and how the run got
    it."""
    return {
        **record_to_plain(record),
        "time": record.time.isoformat(),
        "cached": record.cached,
        "timings": dict(record.timings),
    }


def full_record_from_plain(value: object) -> FileRecord:
    """A record from ``full_record_to_plain``'s form; raises Malformed for anything else."""
    if type(value) is not dict:
        raise Malformed("a record is not an object")
    missing = sorted(_RUN_KEYS - value.keys())
    if missing:
        raise Malformed(f"a record without {missing[0]!r}")
    path, cached, timings = value.get("path"), value["cached"], value["timings"]
    if type(path) is not str or type(cached) is not bool:
        raise Malformed("wrong types")
    if type(timings) is not dict or not all(type(t) is float for t in timings.values()):
        raise Malformed("'timings' is not an object of seconds")
    try:
        time = datetime.fromisoformat(value["time"])
    except (TypeError, ValueError):
        raise Malformed("'time' is not a date and time") from None
    outcome = {k: v for k, v in value.items() if k not in _RUN_KEYS}
    record = record_from_plain(outcome, path, time)
    record.cached, record.timings = cached, timings
    return record


def _flat_to_plain(item: ChangeEvent | Notice) -> list[object]:
    """The fields in declaration order; enums by value."""
    return [
        v.value if isinstance(v, Enum) else v
        for v in (getattr(item, f.name) for f in dataclasses.fields(item))
    ]


def _checkers(cls: type) -> tuple[Callable[[object], object], ...]:
    """One checker per field of ``cls`` (str, int, bool or a str Enum), in declaration order."""
    hints = typing.get_type_hints(cls)
    checkers = []
    for f in dataclasses.fields(cls):
        kind = hints[f.name]
        if isinstance(kind, type) and issubclass(kind, Enum):
            checkers.append(_enum_checker(kind))
        elif kind in (str, int, bool):
            checkers.append(_type_checker(kind))
        else:  # a field type this codec does not know: fail at import, in the tests
            raise TypeError(f"{cls.__name__}.{f.name}: {kind!r} is not a plain type")
    return tuple(checkers)


def _type_checker(kind: type) -> Callable[[object], object]:
    def check(v: object) -> object:
        if type(v) is not kind:  # exact: True is not an int here
            raise Malformed(f"not a {kind.__name__}")
        return v

    return check


def _enum_checker(kind: type[Enum]) -> Callable[[object], object]:
    return lambda v: _enum(kind, v)


E = TypeVar("E", bound=Enum)


def _enum(kind: type[E], v: object) -> E:
    if type(v) is not str:
        raise Malformed(f"not a {kind.__name__}")
    try:
        return kind(v)
    except ValueError:
        raise Malformed(f"not a {kind.__name__}: {v!r}") from None


def _flat_list(cls: type[T], items: object, rel: str) -> list[T]:
    if type(items) is not list:
        raise Malformed("not a list")
    checkers = _CHECKERS[cls]
    out = []
    for item in items:
        if type(item) is not list or len(item) != len(checkers):
            raise Malformed(f"not a {cls.__name__}")
        try:
            values: list[Any] = [check(v) for check, v in zip(checkers, item)]
        except Malformed:
            raise Malformed(_wrong_field(cls, item)) from None
        built = cls(*values)
        if not _of_file(built.file, rel):
            raise Malformed(f"a {cls.__name__} of another file")
        out.append(built)
    return out


def _wrong_field(cls: type[T], item: list[object]) -> str:
    """Which value of an event or notice is not of its field's type."""
    for f, check, v in zip(dataclasses.fields(cls), _CHECKERS[cls], item):
        try:
            check(v)
        except Malformed:
            return f"{f.name!r} of a {cls.__name__} is not {f.type}"
    return f"not a {cls.__name__}"  # (not reached: some value failed)


def _of_file(file: str, rel: str) -> bool:
    """``file`` names ``rel``, or one of its cells for a notebook (``nb.ipynb#cell3``)."""
    notebook, cell = split_cell(file)
    return file == rel or (cell is not None and notebook == rel)


# a field type the codec does not know fails on import (in the tests), not in a run
_CHECKERS = {ChangeEvent: _checkers(ChangeEvent), Notice: _checkers(Notice)}


def _every_field_kept() -> None:
    """A FileRecord field neither form keeps fails on import (in the tests), not in a run: a
    sharded run's records would lose it (as they once lost libcst_stages)."""
    kept = _RECORD_KEYS | _RUN_KEYS | {"framework"}
    lost = {f.name for f in dataclasses.fields(FileRecord)} ^ kept
    if lost:
        raise TypeError(f"FileRecord fields the record codec does not know: {sorted(lost)}")


_every_field_kept()


def run_digest(result: RunResult) -> str | None:
    """A digest of what a run's reports read besides the files' text and the time: the run's
    fingerprint, every option but where and how it ran, the -m file, the notes and every
    file's record as the cache keeps it (report/report_cache.py keys the workbook and the page
    by it); None for a run whose reports read more (--library's facts)."""
    if result.options.library:
        return None
    # (how and where the run was carried out is no part of what they show: the project by its
    # name, its files by their records)
    options = dataclasses.replace(
        result.options,
        input=result.project.name,
        output="",
        overwrite=False,
        jobs=0,
        cache_dir=None,
        use_cache=True,
    )
    body = json.dumps(
        [
            result.fingerprint,
            repr(options),
            result.main_rel,
            result.kit_entry,
            [[severity.value, message] for severity, message in result.notes],
            [record_to_plain(record) for record in result.files],
        ],
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(body.encode("utf-8", "surrogateescape")).hexdigest()
