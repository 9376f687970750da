"""Predicates that select CUDA-only code from a distance (part of rule cuda_only.guard).

``def _eligible(x): return x.is_cuda and x.dtype == torch.bfloat16`` asks "is this CUDA?" in a
function of its own; ``if not _eligible(x): return reference(x)`` in front of a Triton kernel
uses the answer. Migrated, the predicate would be true on the NPU and send NPU tensors into the
kernel. A module-level function whose body holds CUDA conditions, called in the test of an
``if`` whose code (its body, its ``else``, and the statements after it in the same block) uses
CUDA-only code of the file, keeps its conditions, as a guard does.
"""

from __future__ import annotations

import ast
from bisect import bisect_left
from functools import lru_cache

from ms_fmk_transplt.engine.project_facts import ProjectFacts
from ms_fmk_transplt.engine.rules.cuda_only.cuda_only_code import (
    cuda_only_names,
    definition_uses,
    names_in,
)
from ms_fmk_transplt.engine.spans.shared_tree import tree_of
from ms_fmk_transplt.engine.tree_nodes import tree_nodes, walk_nodes
from ms_fmk_transplt.tables.unsupported_table import UnsupportedTable

_BLOCKS = ("body", "orelse", "finalbody")


def _called(test: ast.AST, names: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]) -> list[str]:
    return [
        n.func.id
        for n in walk_nodes([test])
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names
    ]


@lru_cache(maxsize=8)
def kept_predicates(
    source: bytes, table: UnsupportedTable, facts: ProjectFacts | None = None, path: str = ""
) -> dict[str, str]:
    """Name -> the CUDA-only code it selects, for the file's predicate functions to keep."""
    known = cuda_only_names(source, table, facts, path)
    if not known:
        return {}
    try:
        tree = tree_of(source)
    except (SyntaxError, ValueError):
        return {}
    candidates = {
        n.name: n
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and definition_uses(n)[0]
    }
    if not candidates:
        return {}
    nodes = tree_nodes(tree)
    # the lines of the calls of a candidate: only an `if` whose test spans one can call it
    lines = sorted(
        n.lineno
        for n in nodes
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in candidates
    )
    if not lines:
        return {}
    kept: dict[str, str] = {}
    for node in (tree, *nodes):
        for name in _BLOCKS:
            block = getattr(node, name, None)
            if not isinstance(block, list):
                continue
            for i, stmt in enumerate(block):
                if not isinstance(stmt, ast.If) or not _spans(stmt.test, lines):
                    continue
                called = _called(stmt.test, candidates)
                region = [*stmt.body, *stmt.orelse, *block[i + 1 :]]
                used = sorted(names_in(region) & known.keys()) if called else []
                for predicate in called:
                    if used and predicate not in kept:
                        kept[predicate] = known[used[0]]
    return kept


def _spans(test: ast.expr, lines: list[int]) -> bool:
    at = bisect_left(lines, test.lineno)
    return at < len(lines) and lines[at] <= (test.end_lineno or test.lineno)


def predicate_message(name: str, what: str) -> str:
    return (
        f"CUDA condition kept: the predicate {name} selects CUDA-only code ({what}); "
        "the NPU takes the fallback"
    )
