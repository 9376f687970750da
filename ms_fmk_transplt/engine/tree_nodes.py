"""Every node of a stdlib tree, in ``ast.walk``'s order, walked once per tree and kept on it:
the whole-file analyses (the CUDA-only names and predicates, the device strings kept beside an
NPU arm, Lightning accelerators) each walked the whole tree with ``ast.walk`` again."""

from __future__ import annotations

import ast
from collections.abc import Iterable

# leaves ast.walk yields that no analysis asks about (Load/Store, operators)
_SKIP = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
_KEY = "_msft_nodes"  # kept on the tree (not a field: ast.walk and ast.dump never see it)


def walk_nodes(roots: Iterable[ast.AST]) -> list[ast.AST]:
    """The nodes under ``roots`` (included), breadth first in field order as ``ast.walk``
    yields them, without expression contexts and operators. A list and an index instead of
    ast.walk's generators of generators: about twice as fast."""
    found = [r for r in roots if not isinstance(r, _SKIP)]
    at = 0
    while at < len(found):
        node = found[at]
        at += 1
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                found.extend(
                    v for v in value if isinstance(v, ast.AST) and not isinstance(v, _SKIP)
                )
            elif isinstance(value, ast.AST) and not isinstance(value, _SKIP):
                found.append(value)
    return found


def tree_nodes(tree: ast.Module) -> list[ast.AST]:
    """The nodes below the module node (walk_nodes, without the module itself: kept on the
    tree, a list holding the tree would be a reference cycle, freed only by the cyclic
    collector), walked on the first call for the tree."""
    found: list[ast.AST] | None = tree.__dict__.get(_KEY)
    if found is None:
        found = tree.__dict__[_KEY] = walk_nodes([tree])[1:]
    return found
