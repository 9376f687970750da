"""Jupyter notebooks (.ipynb): code cells are migrated one by one; markdown, outputs and metadata
are untouched. IPython lines (``%magic``, ``!shell``, with the lines a trailing backslash
continues them on) are masked while a cell is migrated and put back unchanged; cells starting
with a cell magic (``%%bash``...) are left alone.
``import torch_npu`` is added once, after the first ``import torch`` of the notebook (or at the
top of the first code cell). A notebook that imports TensorFlow and no torch is a TensorFlow
notebook: every cell is migrated as TensorFlow code of the notebook's style, and the adapter's
import (TF 1.x) or the NPU device opened (TF 2.x) is added once, after its first TensorFlow
import. Rows of the reports name the cell: ``File`` is
``<notebook>#cell<N>`` (N counts all cells from 0) and lines are lines of that cell."""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import re
from typing import Any

from ms_fmk_transplt.engine import EngineOptions, fold_file_rows, migrate_source
from ms_fmk_transplt.engine.rules import family_exports
from ms_fmk_transplt.engine.rules.family_exports import DECODE_ERROR, SYNTAX_ERROR, TORCH_NPU
from ms_fmk_transplt.engine.skipped_file import skipped
from ms_fmk_transplt.events import (
    ChangeEvent,
    FileResult,
    FileStatus,
    Notice,
    Operation,
    cell_location,
)
from ms_fmk_transplt.scan.notebook_code import (
    cell_source,
    mask_ipython_lines,
    strip_leading_indent,
)
from ms_fmk_transplt.tables import Tables

_TORCH_IMPORT = re.compile(r"^(import torch\b|from torch\b)")
_TF_IMPORT = re.compile(r"^(import|from) (tensorflow|tf_keras|horovod\.(tensorflow|keras))\b")


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
    style = _tensorflow_style(cells, tables)
    options = options or EngineOptions()
    decided = options.project.programs.style(path) if options.project and style else ""
    options = dataclasses.replace(
        options,
        insert_torch_npu=False,
        fold_rows=False,  # folded below, once the rows' lines are final
        tf_notebook_style=style,
        tf_notebook_imports=_imports(cells) if style else (),
        tf_notebook_version=("tf1" if decided == "tf1" else "tf2") if decided else "",
    )
    events: list[ChangeEvent] = []
    notices: list[Notice] = []
    sources: dict[str, bytes] = {}  # each cell's code as it was migrated, by the cell's name
    changed = False
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "code" or cell_source(cell).lstrip().startswith("%%"):
            continue
        location = cell_location(path, index)
        result, sources[location] = _migrate_cell(cell, location, tables, options)
        notices += result.notices
        if result.status == FileStatus.CHANGED:
            events += result.events
            changed = True
    framework = "tensorflow" if style else ""
    if not changed and not (style == "tf2" and _tf2_open_needed(cells)):
        notices = _folded(notices, sources, tables, options)
        return FileResult(path, FileStatus.UNCHANGED, data, notices=notices, framework=framework)
    if style:
        # (the TensorFlow family is loaded for a TensorFlow notebook only)
        statements = family_exports.tf_statements(style, tables.tf_migration, changed)
        inserted = _insert_after(cells, path, statements, _TF_IMPORT)
    else:
        inserted = _insert_torch_npu(cells, path, tables)
    for event in inserted:
        events, notices = _shift_lines(events, notices, event)
    events += inserted
    notices = _folded(notices, sources, tables, options)
    output = json.dumps(nb, indent=_indent(raw), ensure_ascii=False)
    if raw.endswith("\n"):
        output += "\n"
    return FileResult(
        path,
        FileStatus.CHANGED,
        output.encode("utf-8"),
        events=events,
        notices=notices,
        framework=framework,
    )


def _folded(
    notices: list[Notice], sources: dict[str, bytes], tables: Tables, options: EngineOptions
) -> list[Notice]:
    """Each cell's rows folded as a file's are (one row per file and library, ...), now that
    their lines are final: the lines a folded row lists are those the rows name."""
    by_cell: dict[str, list[Notice]] = {}
    for n in notices:
        by_cell.setdefault(n.file, []).append(n)
    return [
        n
        for cell, rows in by_cell.items()
        for n in (fold_file_rows(rows, sources[cell], tables, options) if cell in sources else rows)
    ]


def _migrate_cell(
    cell: dict[str, Any], cell_path: str, tables: Tables, options: EngineOptions
) -> tuple[FileResult, bytes]:
    """One code cell, its IPython lines masked while it is migrated and put back after; the
    cell's source is replaced when it changed. Also the code migrated."""
    original = _lines(cell_source(cell))
    lines = list(original)
    indent, stripped = strip_leading_indent(lines)  # (IPython runs an indented cell dedented)
    masked = mask_ipython_lines(lines)
    code = "".join(lines).encode("utf-8")
    result = migrate_source(code, cell_path, tables, options)
    if result.status == FileStatus.CHANGED:
        new_lines = _lines(result.output.decode("utf-8"))
        if indent:  # the cell written back with its indent
            same = len(new_lines) == len(lines)
            new_lines = [
                indent + line if (i in stripped if same else line.strip()) else line
                for i, line in enumerate(new_lines)
            ]
        for i in masked:
            new_lines[i] = original[i]
        _set_source(cell, "".join(new_lines))
    return result, code


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


def _tensorflow_style(cells: list[dict[str, Any]], tables: Tables) -> str:
    """ "tf1" / "tf2" for a notebook that imports TensorFlow and no torch, else ""."""
    code = [cell_source(c) for c in cells if c.get("cell_type") == "code"]
    lines = [line.lstrip() for text in code for line in _lines(text)]
    if not any(_TF_IMPORT.match(x) for x in lines) or any(_TORCH_IMPORT.match(x) for x in lines):
        return ""
    data = "".join(code).encode("utf-8", "surrogatepass")
    return "tf1" if any(m in data for m in tables.tf_migration.tf1_markers) else "tf2"


def _imports(cells: list[dict[str, Any]]) -> tuple[tuple[str, str], ...]:
    """The names the notebook's import lines bind (any cell) -> what they import."""
    bound: dict[str, str] = {}
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        for line in _lines(cell_source(cell)):
            if not line.startswith(("import ", "from ")):
                continue
            try:
                statement = ast.parse(line.strip()).body[0]
            except (SyntaxError, ValueError, IndexError, RecursionError, MemoryError):
                continue
            if isinstance(statement, ast.Import):
                for a in statement.names:
                    bound[a.asname or a.name.split(".")[0]] = (
                        a.name if a.asname else a.name.split(".")[0]
                    )
            elif isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
                for a in statement.names:
                    bound[a.asname or a.name] = f"{statement.module}.{a.name}"
    return tuple(bound.items())


def _tf2_open_needed(cells: list[dict[str, Any]]) -> bool:
    return not any("npu_device" in cell_source(c) for c in cells if c.get("cell_type") == "code")


def _insert_torch_npu(cells: list[dict[str, Any]], path: str, tables: Tables) -> list[ChangeEvent]:
    code = [(i, c) for i, c in enumerate(cells) if c.get("cell_type") == "code"]
    if any("import torch_npu" in cell_source(c) for _, c in code):
        return []
    statement = tables.imports.torch_npu_statement
    message = "import torch_npu inserted (registers the NPU device with torch)"
    return _insert_after(cells, path, [(statement, TORCH_NPU, message)], _TORCH_IMPORT)


def _insert_after(
    cells: list[dict[str, Any]],
    path: str,
    statements: list[tuple[str, str, str]],
    anchor: re.Pattern[str],
) -> list[ChangeEvent]:
    """``statements`` (code, rule, message) on lines of their own after the first line of the
    notebook ``anchor`` matches (else at the top of the first code cell)."""
    code = [(i, c) for i, c in enumerate(cells) if c.get("cell_type") == "code"]
    if not code or not statements:
        return []
    target, line = code[0][0], 0
    for i, cell in code:
        hit = next(
            (n for n, text in enumerate(_lines(cell_source(cell))) if anchor.match(text)), None
        )
        if hit is not None:
            target, line = i, hit + 1
            break
    events = []
    for statement, rule, message in statements:
        lines = _lines(cell_source(cells[target]))
        if line and not lines[line - 1].endswith("\n"):
            lines[line - 1] += "\n"
        lines.insert(line, statement + ("\n" if line < len(lines) else ""))
        _set_source(cells[target], "".join(lines))
        events.append(
            ChangeEvent(
                cell_location(path, target),
                line + 1,
                line + 1,
                rule,
                Operation.INSERT,
                message,
                "",
                statement,
                line + 1,
                line + 1,
            )
        )
        line += 1
    return events
