"""The stdlib tree of the file the span pass is migrating, shared with the helpers that read a
whole file (npu_siblings, cuda_only_names) and with the folding of its rows once the pass is
over (the libraries family's type-only imports and option choices), which would otherwise parse
it again. engine/migrate.py forgets it when the file is done (tests/test_trees_freed.py)."""

from __future__ import annotations

import ast

from ms_fmk_transplt.safety.parse_bounds import check_parse_size
from ms_fmk_transplt.safety.tree_depth import TooDeep, check_tree

_current: tuple[bytes, ast.Module] | None = None


def share(source: bytes, tree: ast.Module | None) -> None:
    """The span pass's tree of ``source`` (None: forget it)."""
    global _current
    _current = (source, tree) if tree is not None else None


def tree_of(source: bytes) -> ast.Module:
    """The stdlib tree of ``source``: the span pass's own when it is this file, else parsed
    (raises SyntaxError/ValueError as ``ast.parse`` does, TooDeep for a file too large to be
    parsed at once: parse_bounds.check_parse_size). Callers only read it."""
    if _current is not None and (_current[0] is source or _current[0] == source):
        return _current[1]
    check_parse_size(source)
    return ast.parse(source)


def analysable_tree(source: bytes) -> ast.Module | None:
    """``tree_of(source)`` for a whole-file analysis, checked against the depth guard (a long
    attribute chain would overflow the recursive helpers that read names); None for a file
    that cannot be analysed: Python cannot read it, or it is beyond the parse bounds or the
    depth guard (the file's own migration reports it)."""
    if _current is not None and (_current[0] is source or _current[0] == source):
        return _current[1]  # the span pass's: it passed the guard before the pass walked it
    try:
        tree = tree_of(source)
        check_tree(tree, source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, TooDeep):
        return None
    return tree
