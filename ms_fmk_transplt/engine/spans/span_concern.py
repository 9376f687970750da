"""Base class of the span pass's concerns (the built-in rules; engine/base.py is the base of the
LibCST stages' concerns)."""

from __future__ import annotations

from ms_fmk_transplt.engine.spans.span_context import SpanContext


class SpanConcern:
    """One migration concern of the span pass. Subclasses define ``visit_<Node>(node)`` and/or
    ``leave_<Node>(node)`` for ``ast`` node types (plus ``SimpleString``/``FormattedString`` for
    string tokens, ``visit_FormattedPart`` for an f-string token joined to other strings that
    is not a device string, given as a StringPart, and ``keyword`` for keyword arguments); the
    pass calls them in the order the concerns are registered (engine/rules/registry.py). A
    node's current text (with the edits of the concerns before) is ``ctx.code(node)``."""

    def __init__(self, ctx: SpanContext) -> None:
        self.ctx = ctx
        self.tables = ctx.tables
