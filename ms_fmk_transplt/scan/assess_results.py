"""``--assessed PATH``: the ops.csv a run of ``kit assess`` wrote (PATH: the file, or the
``assess`` folder holding it), read back into engine/assess_facts.py's facts for the migration.

Read as data, strictly: a file that is not such a CSV (no ``API``/``Calls``/``Where`` columns, a
count that is no number, not UTF-8, larger than MAX_BYTES) is one line of error naming it (exit
2); nothing in it runs. A row whose ``Where`` names no project line (reached only in a library,
or in another thread) or a file the input does not hold (renamed since) is not placed: the log
says so, one line per API."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path, PurePosixPath

from ms_fmk_transplt.engine.assess_facts import AssessedApi, AssessFacts
from ms_fmk_transplt.errors import UserError

MAX_BYTES = 64 * 2**20
_REQUIRED = ("API", "Calls", "Dtypes", "Shapes", "Dynamic", "Where")
_WHERE = re.compile(r"(?P<path>[^\n]+?):(?P<line>[0-9]{1,9})(?: \((?P<library>[^()\n]*)\))?")
_API = re.compile(r"[A-Za-z_][\w.]{0,199}")
_COUNT = re.compile(r"[0-9]{1,12}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_CELL = 500  # characters of a cell shown in the rows
MAX_SHAPES = 1000  # of the Shapes cell


def ops_csv(value: str) -> Path:
    """The ops.csv ``--assessed`` names: the file, or the folder holding it."""
    path = Path(value)
    if path.is_dir():
        path = path / "ops.csv"
    if not path.is_file():
        raise UserError(value, "--assessed: no ops.csv there (give kit assess's assess/ folder)")
    return path


def read_assessed(value: str, root: Path) -> tuple[AssessFacts, list[str]]:
    """The facts of ``value``'s ops.csv for the project at ``root``, and the log's lines."""
    path = ops_csv(value)
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise UserError(path, f"--assessed: cannot read it ({exc.strerror})") from None
    if len(data) > MAX_BYTES:
        raise UserError(path, f"--assessed: larger than {MAX_BYTES // 2**20} MiB")
    try:
        text = data.decode("utf-8-sig")
        reader = csv.DictReader(io.StringIO(text, newline=""))
        missing = [c for c in _REQUIRED if c not in (reader.fieldnames or ())]
        if missing:
            raise UserError(path, f"--assessed: not kit assess's ops.csv (no {missing[0]} column)")
        rows = list(reader)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise UserError(path, f"--assessed: not kit assess's ops.csv ({exc})") from None
    files: dict[str, list[AssessedApi]] = {}
    log: list[str] = []
    lengths: dict[str, int] = {}  # file -> its number of lines
    for number, row in enumerate(rows, 2):
        api, where = (row.get("API") or "").strip(), (row.get("Where") or "").strip()
        calls = (row.get("Calls") or "").strip()
        if not _API.fullmatch(api) or not _COUNT.fullmatch(calls) or None in row:  # (extra cells)
            raise UserError(path, f"--assessed: line {number} is not an ops.csv row")
        placed, why = _place(where, root, lengths)
        if placed is None:
            shown = _cell(where) or "no project line"
            log.append(f"--assessed: {api} ({shown}) is not placed{why}")
            continue
        rel, line, library = placed
        files.setdefault(rel, []).append(
            AssessedApi(
                api,
                line,
                library,
                int(calls),
                _words(row.get("Dtypes")),
                _words(row.get("Arguments")),
                _cell(row.get("Shapes"), MAX_SHAPES),
                (row.get("Dynamic") or "").strip() == "yes",
            )
        )
    facts = AssessFacts(str(path), {p: tuple(apis) for p, apis in sorted(files.items())})
    placed_count = sum(len(apis) for apis in facts.files.values())
    log.insert(0, f"--assessed {path}: {placed_count} of {len(rows)} APIs at project lines")
    return facts, log


def _cell(text: str | None, limit: int = MAX_CELL) -> str:
    """A cell as shown in the rows: control characters dropped, at most ``limit`` characters."""
    clean = _CONTROL.sub("", (text or "").strip())
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."


def _words(text: str | None) -> frozenset[str]:
    return frozenset(w for w in (_cell(p, 80) for p in _cell(text).split(",")) if w)


def _place(
    where: str, root: Path, lengths: dict[str, int]
) -> tuple[tuple[str, int, str] | None, str]:
    """(file, line, library) of a Where cell, or None and why: no project line, no such file,
    a line past its end (the project changed since the assessment)."""
    match = _WHERE.fullmatch(where)
    if match is None:
        return None, ""
    rel = PurePosixPath(match["path"].replace("\\", "/"))
    line = int(match["line"])
    if rel.is_absolute() or ".." in rel.parts or not rel.parts or line < 1:
        return None, ""
    path = root / rel
    if not path.is_file() or path.is_symlink():
        return None, " (no such file in the project)"
    key = rel.as_posix()
    if key not in lengths:
        try:
            data = path.read_bytes()
        except OSError:
            data = b""
        lengths[key] = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    if line > lengths[key]:
        return None, f" ({key} has {lengths[key]} lines: changed since the assessment?)"
    return (key, line, _cell(match["library"], 80)), ""
