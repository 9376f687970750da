"""A notebook's Python code as the migration sees it (run/notebook.py migrates its cells; the
program model reads it whole): its code cells, IPython lines masked (``%magic``, ``!shell``,
with the lines a trailing backslash continues them on), a cell's leading indent removed (as
IPython does), cells starting with a cell magic (``%%bash``...) left out."""

from __future__ import annotations

import json
from typing import Any

MASK = "pass  # msft: ipython line"


def cell_source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def mask_ipython_lines(lines: list[str]) -> dict[int, str]:
    """Mask each IPython line of a cell in place (``lines``) and give back what they were:
    ``%magic`` and ``!shell`` lines, and the lines a trailing backslash continues them on
    (``!python train.py \\`` then ``  --epochs 3``: IPython reads them as one line), each
    masked at the indentation of the line that starts it (a continuation line's own
    indentation is the shell's, not Python's). A backslash that ends a Python line is left
    to Python."""
    masked: dict[int, str] = {}
    indent: str | None = None  # the indentation of the magic a backslash continues
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        body = line.rstrip("\r\n")
        if indent is None and not stripped.startswith(("%", "!")):
            continue
        if indent is None:
            indent = line[: len(line) - len(stripped)]
        masked[i] = line
        lines[i] = indent + MASK + line[len(body) :]
        if not body.endswith("\\"):
            indent = None
    return masked


def strip_leading_indent(lines: list[str]) -> tuple[str, set[int]]:
    """Remove a cell's leading indent in place (``lines``), as IPython does before it runs a
    cell (IPython.core.inputtransformer2: ``leading_empty_lines``, then ``leading_indent``:
    the spaces and tabs starting the first line are removed from every line starting with
    them): the indent and the lines it was removed from."""
    first = next((line for line in lines if line.strip()), "")
    indent = first[: len(first) - len(first.lstrip(" \t"))]
    stripped: set[int] = set()
    if indent:
        for i, line in enumerate(lines):
            if line.startswith(indent):
                lines[i] = line[len(indent) :]
                stripped.add(i)
    return indent, stripped


def notebook_code(data: bytes) -> bytes | None:
    """The notebook's code cells joined, IPython lines masked; None for a file that is not a
    readable notebook (the migration reports it)."""
    try:
        nb = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        return None
    parts = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        text = cell_source(cell)
        if text.lstrip().startswith("%%"):
            continue
        lines = text.splitlines(keepends=True)
        strip_leading_indent(lines)
        mask_ipython_lines(lines)
        parts.append("".join(lines).rstrip("\r\n") + "\n")
    return "".join(parts).encode("utf-8", "surrogatepass")
