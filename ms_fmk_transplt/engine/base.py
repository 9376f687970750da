"""Base class of the concerns of the LibCST stages (-r, -sim, distributed -m; the span pass's
concerns derive from engine/spans/span_concern.py)."""

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


class Concern:
    """One migration concern of a LibCST stage. Subclasses define ``visit_<Node>(node)`` and/or
    ``leave_<Node>(original, updated) -> node`` methods; the stage's transformer calls them
    in the order the concerns are registered, feeding each ``leave`` the previous result.
    Metadata (qualified names, positions) is only available for *original* nodes."""

    def __init__(self, ctx: MigrationContext) -> None:
        self.ctx = ctx
        self.tables = ctx.tables
