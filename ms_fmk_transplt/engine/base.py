"""Base class of the engine's concern modules."""

from __future__ import annotations

from ms_fmk_transplt.engine.context import MigrationContext


class Concern:
    """One migration concern. Subclasses define ``visit_<Node>(node)`` and/or
    ``leave_<Node>(original, updated) -> node`` methods; the single-pass transformer calls them
    in the order the concerns are registered, feeding each ``leave`` the previous result.
    Metadata (qualified names, positions) is only available for *original* nodes."""

    def __init__(self, ctx: MigrationContext) -> None:
        self.ctx = ctx
        self.tables = ctx.tables
