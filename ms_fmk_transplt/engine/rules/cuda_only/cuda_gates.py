"""``"cuda"`` tests whose GPU arm takes a CUDA-only library path through transformers (part of
rule cuda_only.guard).

``if args.device == "cuda": model = AutoModelForCausalLM.from_pretrained(name, load_in_4bit=True)``
or ``if device != "cuda": ... else: quant = BitsAndBytesConfig(...)``: the arm the test takes on
a GPU runs bitsandbytes or flash-attn through transformers, which exist only for CUDA. Rewritten
to ``"npu"``, the test would send the NPU into that arm; kept, the NPU takes the other one. What
counts as such a path is data (rules/libraries.json, the entries marked ``gate``):
a call (``BitsAndBytesConfig``), a keyword (``load_in_8bit=True``), a value
(``attn_implementation="flash_attention_2"``, or that string alone). Found on the stdlib tree of
the whole file, by the position of the literal; an arm the GPU does not take does not count (on
the NPU it is not taken either once its test says ``"npu"``).
"""

from __future__ import annotations

import ast
from functools import lru_cache

from ms_fmk_transplt.engine.scope_model import full_name
from ms_fmk_transplt.engine.spans.shared_tree import tree_of
from ms_fmk_transplt.engine.tree_nodes import tree_nodes
from ms_fmk_transplt.tables.library_table import CudaOnlyPaths

Key = tuple[int, int]  # (line, column) of the "cuda" literal
CUDA = "cuda"
_QUOTED = (b'"cuda"', b"'cuda'")


def _cuda_test(test: ast.expr) -> tuple[ast.Constant, bool] | None:
    """The "cuda" literal a test compares with, and whether the test's body is the GPU arm
    (``== "cuda"``, also inside an ``and``) or its ``else`` (``!= "cuda"``)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        for value in test.values:
            found = _cuda_test(value)
            if found is not None and found[1]:
                return found
        return None
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    op = test.ops[0]
    if not isinstance(op, (ast.Eq, ast.NotEq)):
        return None
    for side in (test.left, test.comparators[0]):
        if isinstance(side, ast.Constant) and side.value == CUDA:
            return side, isinstance(op, ast.Eq)
    return None


class _PathFinder:
    def __init__(self, paths: CudaOnlyPaths) -> None:
        self.paths = paths
        self.values = frozenset(value for _, value in paths.keyword_values)

    def first_use(self, arm: list[ast.stmt] | ast.expr) -> str | None:
        """What in an arm is a CUDA-only library path (None: nothing)."""
        for stmt in arm if isinstance(arm, list) else [arm]:
            for node in ast.walk(stmt):
                found = self._use(node)
                if found:
                    return found
        return None

    def _use(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Call):
            name = full_name(node.func)
            leaf = name.rsplit(".", 1)[-1] if name else None
            if leaf in self.paths.calls:
                return leaf
            for kw in node.keywords:
                value = kw.value
                given = not (isinstance(value, ast.Constant) and value.value in (False, None))
                if kw.arg in self.paths.keywords and given:
                    return f"{kw.arg}=..."
                text = value.value if isinstance(value, ast.Constant) else None
                if isinstance(text, str) and (kw.arg, text) in self.paths.keyword_values:
                    return f'{kw.arg}="{text}"'
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in self.values:  # attn = "flash_attention_2" if device == "cuda" ...
                return node.value
        return None


def _may_use(source: bytes, paths: CudaOnlyPaths) -> bool:
    """Cheap test: does the file spell any name of a CUDA-only path?"""
    words = {*paths.calls, *paths.keywords, *(value for _, value in paths.keyword_values)}
    return any(w.encode() in source for w in words)


@lru_cache(maxsize=8)
def cuda_only_gates(source: bytes, paths: CudaOnlyPaths) -> dict[Key, str]:
    """Positions of the "cuda" literals of tests whose GPU arm takes a CUDA-only library path,
    with what that path uses."""
    if not any(q in source for q in _QUOTED) or not _may_use(source, paths):
        return {}
    try:
        tree = tree_of(source)
    except (SyntaxError, ValueError):
        return {}
    finder = _PathFinder(paths)
    found: dict[Key, str] = {}
    for node in tree_nodes(tree):
        if isinstance(node, (ast.If, ast.IfExp)):
            test = _cuda_test(node.test)
            if test is None:
                continue
            literal, equal = test
            use = finder.first_use(node.body if equal else node.orelse)
            if use is not None:
                found[(literal.lineno, literal.col_offset)] = use
    return found
