"""A LibCST stage's traversal of one file (engine/stages.py), dispatching to each of the stage's
concerns in order."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Union

import libcst as cst

from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.context import MigrationContext

# What a ``leave_<Node>`` method returns: the node (changed or not), a removal or a flattening.
_Left = Union[cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel[cst.CSTNode]]
_Leave = Callable[[cst.CSTNode, cst.CSTNode], _Left]

_STRING_NODES = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


class MigrationTransformer(cst.CSTTransformer):
    # Metadata is resolved lazily by the context (see MigrationContext._get_metadata).

    def __init__(self, ctx: MigrationContext, concerns: Sequence[type[Concern]]) -> None:
        super().__init__()
        self.ctx = ctx
        self._visit: dict[str, list[Callable[[cst.CSTNode], object]]] = defaultdict(list)
        self._leave: dict[str, list[_Leave]] = defaultdict(list)
        for concern_cls in concerns:
            concern = concern_cls(ctx)
            for attr in dir(concern):
                if attr.startswith("visit_"):
                    self._visit[attr[6:]].append(getattr(concern, attr))
                elif attr.startswith("leave_"):
                    self._leave[attr[6:]].append(getattr(concern, attr))

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = type(node).__name__
        if kind in ("Import", "ImportFrom"):
            self.ctx.import_depth += 1
        elif isinstance(node, cst.Expr) and isinstance(node.value, _STRING_NODES):
            self._mark_docstring(node.value)
        for fn in self._visit.get(kind, ()):
            fn(node)
        return True

    # LibCST types on_leave as returning the node's own type; a concern may replace a node with
    # another kind (or remove or flatten it), so this dispatcher returns any of them.
    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> _Left:
        kind = type(original_node).__name__
        result: _Left = updated_node
        for fn in self._leave.get(kind, ()):
            if not isinstance(result, type(original_node)):
                break  # replaced by another kind of node / removed / flattened: stop here
            result = fn(original_node, result)
        if kind in ("Import", "ImportFrom"):
            self.ctx.import_depth -= 1
        return result

    def _mark_docstring(self, node: cst.BaseExpression) -> None:
        """Bare string statements (docstrings) are prose: no concern may rewrite them."""
        self.ctx.docstrings.add(id(node))
        if isinstance(node, cst.ConcatenatedString):
            self._mark_docstring(node.left)
            self._mark_docstring(node.right)
