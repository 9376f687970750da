"""The span pass's walk leaves out the fields that never hold a node it visits (a name, a flag,
an operator: walker._NOT_CHILDREN): on every fixture, each such field holds no other node."""

from __future__ import annotations

import ast
import warnings

from fixture_files import READABLE

from ms_fmk_transplt.engine.spans.walker import _NOT_CHILDREN, _SKIP


def _nodes(value: object) -> list[ast.AST]:
    items = value if isinstance(value, list) else [value]
    return [v for v in items if isinstance(v, ast.AST) and not isinstance(v, _SKIP)]


def test_the_fields_the_walk_leaves_out_hold_no_node() -> None:
    seen: set[str] = set()
    for path in READABLE:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(path.read_bytes())
        for node in ast.walk(tree):
            for field in _NOT_CHILDREN.intersection(node._fields):
                seen.add(field)
                assert not _nodes(getattr(node, field)), (path, type(node).__name__, field)
    assert {"id", "attr", "arg", "ctx", "op", "module", "level"} <= seen  # (the test sees them)
