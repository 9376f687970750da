"""A file's record as plain JSON values and back, for the result cache (cache.py), whose entries
are data someone may have changed: reading accepts exactly the shape written (every field of
its type, enums by value, events and notices of the file the entry is for) and rejects anything
else with ``Malformed``, never half-read."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar

from ms_fmk_transplt.events import ChangeEvent, FileStatus, Notice, split_cell
from ms_fmk_transplt.records import FileRecord

T = TypeVar("T", ChangeEvent, Notice)
_RECORD_KEYS = frozenset(
    {"path", "status", "python", "analysed", "libcst_stages", "events", "notices"}
)


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
        values: list[Any] = [check(v) for check, v in zip(checkers, item)]
        built = cls(*values)
        if not _of_file(built.file, rel):
            raise Malformed(f"a {cls.__name__} of another file")
        out.append(built)
    return out


def flat_from_fields(cls: type[T], obj: object) -> T:
    """An event or notice from its JSON object form (field names as keys, omitted fields at
    their defaults: how a shard part stores them), every field checked as in the cache's form;
    raises Malformed naming the first wrong field."""
    name = cls.__name__
    if type(obj) is not dict:
        raise Malformed(f"a {name} is not an object")
    fields = dataclasses.fields(cls)
    known = {f.name for f in fields}
    unknown = next((key for key in obj if key not in known), None)
    if unknown is not None:
        raise Malformed(f"unknown key {unknown!r} in a {name}")
    values: dict[str, Any] = {}
    for f, check in zip(fields, _CHECKERS[cls]):
        if f.name not in obj:
            if f.default is dataclasses.MISSING:
                raise Malformed(f"a {name} without {f.name!r}")
            continue
        try:
            values[f.name] = check(obj[f.name])
        except Malformed:
            raise Malformed(f"{f.name!r} of a {name} is not {f.type}") from None
    return cls(**values)


def _of_file(file: str, rel: str) -> bool:
    """``file`` names ``rel``, or one of its cells for a notebook (``nb.ipynb#cell3``)."""
    notebook, cell = split_cell(file)
    return file == rel or (cell is not None and notebook == rel)


# a field type the codec does not know fails on import (in the tests), not in a run
_CHECKERS = {ChangeEvent: _checkers(ChangeEvent), Notice: _checkers(Notice)}
