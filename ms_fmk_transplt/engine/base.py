"""Base class of the engine's concern modules."""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.engine.context import MigrationContext


def literal_value(node: cst.CSTNode) -> object:
    """The value of a plain string literal (``str`` or ``bytes``), None for anything else or
    a literal Python cannot evaluate (exotic escapes)."""
    if not isinstance(node, cst.SimpleString):
        return None
    try:
        return node.evaluated_value
    except Exception:  # noqa: BLE001 - exotic escapes: not a plain literal
        return None


def subtree(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node`` and every node below it, in visiting order (as ``ast.walk`` for the span
    pass's concerns)."""
    nodes: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            nodes.append(n)
            return True

    node.visit(Collect())
    return nodes


def fstring_texts(node: cst.FormattedString) -> list[tuple[int, str]]:
    """The raw text segments of an f-string, split at its fields, each with the index of its
    text part (-1 for the empty segment where two fields touch); LibCST keeps one text part
    between two fields. As engine/spans/command_overrides.py's fstring_segments splits them."""
    texts: list[tuple[int, str]] = [(-1, "")]
    for i, part in enumerate(node.parts):
        if isinstance(part, cst.FormattedStringText):
            texts[-1] = (i, part.value)
        else:
            texts.append((-1, ""))
    return texts


def replace_in_fstring(
    node: cst.FormattedString, offsets: list[tuple[int, int]], length: int, new: str
) -> cst.FormattedString:
    """``node`` with ``length`` characters at each (segment, offset) of fstring_texts replaced
    by ``new`` (the last first, so that two in one segment both change)."""
    texts = fstring_texts(node)
    parts = list(node.parts)
    for index, offset in sorted(offsets, reverse=True):
        part = parts[texts[index][0]]
        assert isinstance(part, cst.FormattedStringText)
        value = part.value[:offset] + new + part.value[offset + length :]
        parts[texts[index][0]] = part.with_changes(value=value)
    return node.with_changes(parts=parts)


class Concern:
    """One migration concern. Subclasses define ``visit_<Node>(node)`` and/or
    ``leave_<Node>(original, updated) -> node`` methods; the single-pass transformer calls them
    in the order the concerns are registered, feeding each ``leave`` the previous result.
    Metadata (qualified names, positions) is only available for *original* nodes."""

    def __init__(self, ctx: MigrationContext) -> None:
        self.ctx = ctx
        self.tables = ctx.tables
