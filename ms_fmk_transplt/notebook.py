"""Jupyter notebooks (.ipynb): code cells are migrated one by one; markdown, outputs and metadata
are untouched. IPython lines (``%magic``, ``!shell``) are masked while a cell is migrated and
put back unchanged; cells starting with a cell magic (``%%bash``...) are left alone.
``import torch_npu`` is added once, after the first ``import torch`` of the notebook (or at the
top of the first code cell). Rows of the reports name the cell: ``File`` is
``<notebook>#cell<N>`` (N counts all cells from 0) and lines are lines of that cell."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from typing import Any

from ms_fmk_transplt.engine import EngineOptions, migrate_source
from ms_fmk_transplt.engine.rules.imports.torch_npu_spans import TORCH_NPU
from ms_fmk_transplt.engine.rules.parse.parse_errors import DECODE_ERROR, SYNTAX_ERROR
from ms_fmk_transplt.engine.skipped_file import skipped
from ms_fmk_transplt.events import ChangeEvent, FileResult, FileStatus, Notice, Operation
from ms_fmk_transplt.tables import Tables

_MASK = "pass  # msft: ipython line"
_TORCH_IMPORT = re.compile(r"^(import torch\b|from torch\b)")


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _indent(raw: str) -> int | None:
    match = re.search(r"\n( +)\"", raw)
    return len(match.group(1)) if match else None


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")  # would be written back as it is not valid JSON


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is out of range")  # would be written back as Infinity
    return value


def _malformed(nb: object) -> str:
    """What makes parsed JSON something the migration cannot walk ("" when it is fine): the
    notebook must be an object whose ``cells`` is a list of objects, and a code cell's
    ``source`` a string or a list of strings."""
    if not isinstance(nb, dict):
        return f"the top level is a JSON {type(nb).__name__}, not an object"
    cells = nb.get("cells")
    if not isinstance(cells, list):
        return "'cells' is missing" if cells is None else "'cells' is not a list"
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict):
            return f"cell {index} is not an object"
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if not isinstance(source, str) and not (
            isinstance(source, list) and all(isinstance(s, str) for s in source)
        ):
            return f"the source of cell {index} is neither a string nor a list of strings"
    return ""


def migrate_notebook(
    data: bytes, path: str, tables: Tables, options: EngineOptions | None
) -> FileResult:
    try:
        raw = data.decode("utf-8")
        nb = json.loads(raw, parse_constant=_no_constant, parse_float=_finite)
    except (UnicodeDecodeError, ValueError) as exc:
        message = f"not a readable notebook ({exc}); copied unchanged"
        return skipped(path, data, 1, DECODE_ERROR, message, tables)
    except RecursionError:
        message = "not a readable notebook (JSON nested too deeply); copied unchanged"
        return skipped(path, data, 1, DECODE_ERROR, message, tables)
    problem = _malformed(nb)
    if problem:
        message = f"not a valid notebook ({problem}); copied unchanged"
        return skipped(path, data, 1, SYNTAX_ERROR, message, tables)
    cells = nb["cells"]
    options = dataclasses.replace(options or EngineOptions(), insert_torch_npu=False)
    events: list[ChangeEvent] = []
    notices: list[Notice] = []
    changed = False
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "code" or _source(cell).lstrip().startswith("%%"):
            continue
        result = _migrate_cell(cell, f"{path}#cell{index}", tables, options)
        notices += result.notices
        if result.status == FileStatus.CHANGED:
            events += result.events
            changed = True
    if not changed:
        return FileResult(path, FileStatus.UNCHANGED, data, notices=notices)
    inserted = _insert_torch_npu(cells, path, tables)
    if inserted:
        events, notices = _shift_lines(events, notices, inserted[0])
        events += inserted
    output = json.dumps(nb, indent=_indent(raw), ensure_ascii=False)
    if raw.endswith("\n"):
        output += "\n"
    return FileResult(
        path, FileStatus.CHANGED, output.encode("utf-8"), events=events, notices=notices
    )


def _migrate_cell(
    cell: dict[str, Any], cell_path: str, tables: Tables, options: EngineOptions
) -> FileResult:
    """One code cell, its IPython lines masked while it is migrated and put back after; the
    cell's source is replaced when it changed."""
    lines = _lines(_source(cell))
    masked = {}
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")):
            masked[i] = line
            ending = line[len(line.rstrip("\r\n")) :]
            lines[i] = line[: len(line) - len(stripped)] + _MASK + ending
    result = migrate_source("".join(lines).encode("utf-8"), cell_path, tables, options)
    if result.status == FileStatus.CHANGED:
        new_lines = _lines(result.output.decode("utf-8"))
        for i, line in masked.items():
            new_lines[i] = line
        _set_source(cell, "".join(new_lines))
    return result


def _shift_lines(
    events: list[ChangeEvent], notices: list[Notice], inserted: ChangeEvent
) -> tuple[list[ChangeEvent], list[Notice]]:
    """Output lines of the cell that received ``import torch_npu``, moved down past it."""
    cell_file, line = inserted.file, inserted.out_start_line

    def moved(n: int) -> int:
        return n + 1 if n >= line else n

    events = [
        dataclasses.replace(
            e, out_start_line=moved(e.out_start_line), out_end_line=moved(e.out_end_line)
        )
        if e.file == cell_file
        else e
        for e in events
    ]
    notices = [
        dataclasses.replace(
            n,
            out_line=moved(n.out_line or n.line),
            out_end_line=moved(n.out_end_line or n.end_line or n.line),
        )
        if n.file == cell_file
        else n
        for n in notices
    ]
    return events, notices


def _set_source(cell: dict[str, Any], text: str) -> None:
    cell["source"] = _lines(text) if isinstance(cell.get("source"), list) else text


def _insert_torch_npu(cells: list[dict[str, Any]], path: str, tables: Tables) -> list[ChangeEvent]:
    code = [(i, c) for i, c in enumerate(cells) if c.get("cell_type") == "code"]
    if any("import torch_npu" in _source(c) for _, c in code):
        return []
    statement = tables.imports.torch_npu_statement
    target, line = code[0][0], 0
    for i, cell in code:
        hit = next(
            (n for n, text in enumerate(_lines(_source(cell))) if _TORCH_IMPORT.match(text)), None
        )
        if hit is not None:
            target, line = i, hit + 1
            break
    lines = _lines(_source(cells[target]))
    if line and not lines[line - 1].endswith("\n"):
        lines[line - 1] += "\n"
    lines.insert(line, statement + ("\n" if line < len(lines) else ""))
    _set_source(cells[target], "".join(lines))
    return [
        ChangeEvent(
            f"{path}#cell{target}",
            line + 1,
            line + 1,
            TORCH_NPU,
            Operation.INSERT,
            "import torch_npu inserted (registers the NPU device with torch)",
            "",
            statement,
            line + 1,
            line + 1,
        )
    ]
