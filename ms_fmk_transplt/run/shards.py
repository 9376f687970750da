"""Spreading one migration over several machines (a CI matrix) and merging the parts.

``--shard I/N`` migrates the I-th of N parts of the input: a file (or, with ``--zoo``, a model
folder) belongs to part ``1 + sha1(relative path) mod N``, so the split does not depend on the
machine, the order of a listing, or on which other files exist. A part is written to
``<name>_msft.shard-I-of-N/`` with its own reports and ``msft_shard.json``, the records of its
files. ``--merge-shards N`` (same ``-i``/``-o``) then assembles ``<name>_msft/`` from the N parts
and writes the reports from all records: the same files and reports a single run writes. The
parts are removed once merged. With ``--zoo`` each part migrates whole models; the merge writes
the zoo summary from the parts' summaries.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from ms_fmk_transplt import __version__
from ms_fmk_transplt.errors import UserError
from ms_fmk_transplt.events import Severity
from ms_fmk_transplt.records import FileRecord, RunResult
from ms_fmk_transplt.run.record_codec import Malformed, full_record_from_plain, full_record_to_plain
from ms_fmk_transplt.safety.fs_safety import discard, inside, relative_part_path, write_text
from ms_fmk_transplt.safety.regular_files import NotRegularFile, copy_regular

RECORDS = "msft_shard.json"
SCHEMA_VERSION = 2  # 2: each file is record_codec.full_record_to_plain's form


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> (2, 4); raises ValueError with the reason."""
    index, sep, count = text.partition("/")
    if not sep or not index.strip().isdigit() or not count.strip().isdigit():
        raise ValueError(f"{text!r} is not I/N (e.g. 2/4)")
    i, n = int(index), int(count)
    if n < 1 or not 1 <= i <= n:
        raise ValueError(f"{text!r}: I must be between 1 and N")
    return i, n


def suffix(shard: tuple[int, int]) -> str:
    return f".shard-{shard[0]}-of-{shard[1]}"


def part_of(key: str, count: int) -> int:
    """The part (1..count) a relative path or model name belongs to."""
    digest = hashlib.sha1(key.encode("utf-8")).digest()
    return 1 + int.from_bytes(digest[:8], "big") % count


def owns(shard: tuple[int, int] | None, key: str) -> bool:
    return shard is None or part_of(key, shard[1]) == shard[0]


# -- records of a part -----------------------------------------------------------------------
def write_records(
    path: Path, result: RunResult, shard: tuple[int, int], order: dict[str, int]
) -> None:
    """The records of one part, for --merge-shards."""
    data = {
        "schema_version": SCHEMA_VERSION,
        "tool_version": __version__,
        "shard": list(shard),
        "project": result.project.name,
        "fingerprint": result.fingerprint,
        "started": result.started.isoformat(),
        "main_rel": result.main_rel,
        "total_files": len(order),
        "notes": [[s.value, m] for s, m in result.notes],
        "files": [{"index": order[f.path], **full_record_to_plain(f)} for f in result.files],
    }
    write_text(path, json.dumps(data, ensure_ascii=False), errors="surrogateescape")


def check_records_name(root: Path, single_file: bool) -> None:
    """A project holding a file, folder or link named msft_shard.json at its root cannot be
    sharded: each part writes its records under that name (never through a link, never over
    the project's own file, which the merge would then lose)."""
    if not single_file and os.path.lexists(root / RECORDS):
        raise UserError(
            root / RECORDS,
            f"--shard writes each part's records as {RECORDS} at the output's root, and the "
            "project has its own: rename it or run without --shard; nothing written",
        )


def _load(folder: Path, shard: tuple[int, int]) -> dict[str, Any]:
    path = folder / RECORDS
    if not path.is_file():
        raise UserError(
            folder,
            f"part {shard[0]} of {shard[1]} is missing: run with "
            f"--shard {shard[0]}/{shard[1]} first",
        )
    try:
        data: dict[str, Any] = json.loads(path.read_text("utf-8", "surrogateescape"))
    except (OSError, ValueError) as exc:
        raise UserError(path, f"cannot read the records of this part ({exc})") from exc
    except RecursionError as exc:
        raise UserError(path, "cannot read the records of this part (nested too deeply)") from exc
    if not isinstance(data, dict):
        raise UserError(path, "not the records of a part (not a JSON object)")
    if data.get("schema_version") != SCHEMA_VERSION or data.get("tool_version") != __version__:
        raise UserError(
            path,
            f"written by ms_fmk_transplt {data.get('tool_version')}, not "
            f"{__version__}: run every part with the same version",
        )
    return data


def file_record(item: dict[str, Any]) -> FileRecord:
    """A file's record from a part (every field, as record_codec writes it); raises Malformed
    for a field of the wrong type or value: events and notices are checked field by field, as
    cache entries are."""
    return full_record_from_plain({k: v for k, v in item.items() if k != "index"})


_ITEM = {"index": int, "path": str}  # what the merge reads itself; the codec checks the rest
_SEVERITIES = {s.value for s in Severity}


def _item_problem(item: object) -> str | None:
    if not isinstance(item, dict):
        return "an entry of 'files' is not an object"
    for key, kind in _ITEM.items():
        if key not in item or type(item[key]) is not kind:
            return f"an entry of 'files' without a valid {key!r}"
    return None


def _record_problem(item: dict[str, Any]) -> str | None:
    try:
        file_record(item)
    except Malformed as exc:
        return f"{item['path']!r}: {exc}"
    return None


def _malformed(data: dict[str, Any]) -> str | None:
    """What is wrong with the records of a part (None: nothing): every field the merge reads,
    with its type, so that a bad part is one line, never a traceback (each file's record is
    checked once its path is: ``_record_problem``)."""
    files, notes, started = data.get("files"), data.get("notes"), data.get("started")
    if not isinstance(files, list):
        return "'files' is not a list"
    if not isinstance(data.get("fingerprint"), str):
        return "'fingerprint' is not a string"
    if not isinstance(notes, list) or not all(
        isinstance(n, list) and len(n) == 2 and str(n[0]) in _SEVERITIES and isinstance(n[1], str)
        for n in notes
    ):
        return "'notes' is not a list of [severity, message]"
    try:
        datetime.fromisoformat(started)  # type: ignore[arg-type]  # checked here
    except (TypeError, ValueError):
        return "'started' is not a date and time"
    return next((p for p in map(_item_problem, files) if p), None)


def _check_paths(parts: list[tuple[Path, dict[str, Any]]]) -> None:
    """Every path a part lists is relative, stays inside the part and the output (no ``..``,
    no absolute path, no link on the way) and is listed once: checked before anything is
    written."""
    seen: dict[str, Path] = {}  # path -> the part listing it
    links: set[str] = set()
    for folder, data in parts:
        for item in data["files"]:
            path = item["path"]
            rel = relative_part_path(path)
            if rel is None:
                raise UserError(folder, f"{path!r}: not a relative path inside the output")
            if not inside(folder, rel):
                raise UserError(folder / path, "a folder on this path is a link: not followed")
            if path in seen:
                raise UserError(folder / path, "listed by two parts")
            seen[path] = folder
            if (folder / rel).is_symlink():
                links.add(path)
    for path, folder in seen.items():
        if {p.as_posix() for p in PurePosixPath(path).parents} & links:
            raise UserError(
                folder / path, "a folder on this path is a link in a part: not followed"
            )


def _refuse_malformed(folder: Path, problem: str | None) -> None:
    if problem:
        raise UserError(folder / RECORDS, f"malformed records of this part: {problem}")


def load_parts(final_dir: Path, count: int) -> list[tuple[Path, dict[str, Any]]]:
    """The folders and records of the ``count`` parts of ``final_dir``; all must be there and
    come from runs with the same options."""
    parts = []
    for i in range(1, count + 1):
        folder = final_dir.with_name(final_dir.name + suffix((i, count)))
        if not folder.is_dir():
            raise UserError(
                folder, f"part {i} of {count} is missing: run with --shard {i}/{count} first"
            )
        parts.append((folder, _load(folder, (i, count))))
    for folder, data in parts:
        _refuse_malformed(folder, _malformed(data))
    _check_paths(parts)  # a path leading out is named before anything else wrong in a record
    for folder, data in parts:
        _refuse_malformed(folder, next(filter(None, map(_record_problem, data["files"])), None))
    fingerprints = {data["fingerprint"] for _, data in parts}
    if len(fingerprints) > 1:
        raise UserError(
            final_dir,
            "the parts were migrated with different options or rules; "
            "run every part with the same command",
        )
    return parts


def gather(parts: list[tuple[Path, dict[str, Any]]], staging: Path) -> None:
    """Put the files of every part into ``staging`` (hard links where possible); the paths
    were checked by load_parts, and are checked again against what is in ``staging``."""
    for folder, data in parts:
        for item in data["files"]:
            src, dst = folder / item["path"], staging / item["path"]
            rel = relative_part_path(item["path"])
            if rel is None or not inside(staging, rel):
                raise UserError(src, "this path of the part leads outside the output")
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_symlink():
                os.symlink(os.readlink(src), dst)
                continue
            if not src.exists():
                continue  # --analyse: the part holds reports only
            try:
                os.link(src, dst)
            except OSError:  # another file system: a copy (never a FIFO's or through a link)
                _copy(src, dst)


def _copy(src: Path, dst: Path) -> None:
    try:
        copy_regular(src, dst)
    except NotRegularFile as exc:
        raise UserError(src, f"{exc.strerror} in a part: run every part again") from exc


def remove_parts(parts: list[tuple[Path, dict[str, Any]]]) -> None:
    for folder, _ in parts:
        try:
            discard(folder)  # a part that is a link: the link, never what it points to
        except OSError:
            pass
