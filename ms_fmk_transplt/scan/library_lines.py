"""What the lines of an installed library's module are, for ``--deps`` (library_graph.py):
which code a CUDA test selects (the body and ``else`` of ``if torch.cuda.is_available():``,
``if self.use_cuda:``, ``x if x.is_cuda else y``, and the rest of a block after ``if not
x.is_cuda: return ...``), which code another test selects (an option, a setting, an
``except``), which lines are such tests themselves, where a ``"cuda"`` string is a device (an
argument of ``.to()`` / ``torch.device()`` / a tensor factory, a ``device=`` keyword, a
``device = "cuda"`` assignment) rather than a path, a message or a test, what the annotations
name, and which module-level code is optional (inside a module-level ``if`` / ``try``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ms_fmk_transplt.engine.rules.family_exports import cuda_conditions
from ms_fmk_transplt.engine.tree_nodes import module_level

_CUDA_WORD = re.compile(r"cuda|gpu", re.I)  # use_cuda, self.use_cuda, n_gpu, opt["num_gpu"]
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_BLOCKS = ("body", "orelse", "finalbody")
# a "cuda" / "nccl" string passed here is a device or a backend
_DEVICE_CALLS = frozenset(
    {
        *("device", "to", "cuda", "set_device", "Stream", "Event", "Generator", "load"),
        *("empty", "zeros", "ones", "rand", "randn", "randint", "full", "tensor", "arange"),
        *("empty_like", "zeros_like", "ones_like", "init_process_group", "new_group"),
    }
)
_DEVICE_KEYWORDS = frozenset({"device", "map_location", "backend", "device_type", "device_map"})
_DEVICE_NAME = re.compile(r"device|backend", re.I)  # device = "cuda", self.backend = "nccl"


@dataclass(frozen=True)
class LineFacts:
    guarded: frozenset[int]  # code a CUDA test selects
    conditional: frozenset[int]  # code another test selects
    tests: frozenset[int]  # the lines of CUDA tests themselves
    device_strings: frozenset[int]  # lines where a "cuda" / "nccl" string is a device
    optional: frozenset[int]  # module-level code inside an `if` / `try`
    annotations: dict[int, str]  # line -> the types named on it (annotations, isinstance)


def line_facts(tree: ast.Module) -> LineFacts:
    guarded: set[int] = set()
    conditional: set[int] = set()
    tests: set[int] = set()
    annotations: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler):
            conditional.update(_lines(node.body))
        if isinstance(node, (ast.If, ast.IfExp)):
            parts = _parts(node)
            if cuda_test(node.test):
                guarded.update(_lines(parts))
                if isinstance(node, ast.If):
                    tests.update(_lines([node.test]))
            else:
                conditional.update(_lines(parts))
        for name in _BLOCKS:  # `if not x.is_cuda: return ...`: the rest of the block
            block = getattr(node, name, None)
            if isinstance(block, list):
                guarded.update(_after_early_exits(block))
        for annotation in _annotations(node):
            for line in _lines([annotation]):
                annotations[line] = annotations.get(line, "") + " " + ast.unparse(annotation)
    return LineFacts(
        frozenset(guarded),
        frozenset(conditional),
        frozenset(tests),
        frozenset(_device_strings(tree)),
        frozenset(_nested_module_lines(tree)),
        annotations,
    )


def cuda_test(test: ast.AST) -> bool:
    """Whether a condition asks for CUDA: a torch.cuda call, a device compared with
    ``"cuda"``, ``.is_cuda``, a name or key saying cuda or gpu (``self.use_cuda``,
    ``opt['num_gpu'] != 0``), not one compared with None (``gpu is not None``: an option)."""
    if cuda_conditions(test):
        return True
    optional = {
        id(inner)
        for node in ast.walk(test)
        if isinstance(node, ast.Compare) and _with_none(node)
        for inner in ast.walk(node)
    }
    for node in ast.walk(test):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Name) and _CUDA_WORD.search(node.id):
            return True
        if isinstance(node, ast.Attribute) and _CUDA_WORD.search(node.attr):
            return True
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
            and _CUDA_WORD.search(node.slice.value)
        ):
            return True
    return False


def _with_none(node: ast.Compare) -> bool:
    return any(isinstance(s, ast.Constant) and s.value is None for s in node.comparators)


def _parts(node: ast.If | ast.IfExp) -> list[ast.AST]:
    parts: list[ast.AST] = []
    for part in (node.body, node.orelse):
        parts.extend(part if isinstance(part, list) else [part])
    return parts


def _lines(nodes: Sequence[ast.AST]) -> set[int]:
    found: set[int] = set()
    for node in nodes:
        start: int = getattr(node, "lineno", 0)
        end: int = getattr(node, "end_lineno", None) or start
        found.update(range(start, end + 1))
    return found


def _after_early_exits(block: list[ast.stmt]) -> set[int]:
    """The lines after ``if <CUDA test>: return`` (or raise, continue, break) in a block."""
    for i, stmt in enumerate(block):
        if (
            isinstance(stmt, ast.If)
            and not stmt.orelse
            and stmt.body
            and isinstance(stmt.body[-1], _EXITS)
            and cuda_test(stmt.test)
        ):
            return _lines(block[i + 1 :])
    return set()


def _annotations(node: ast.AST) -> list[ast.expr]:
    """Where a type is named, not used: annotations, isinstance's / issubclass's classes."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 2:
        return [node.args[1]] if node.func.id in ("isinstance", "issubclass") else []
    if isinstance(node, ast.arg) and node.annotation is not None:
        return [node.annotation]
    if isinstance(node, ast.AnnAssign):
        return [node.annotation]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
        return [node.returns]
    return []


def _device_strings(tree: ast.Module) -> set[int]:
    """The lines where a ``"cuda..."`` or ``"nccl"`` string is given as a device or backend."""
    found: set[int] = set()
    for node in ast.walk(tree):
        values: list[ast.AST] = []
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else ""
            name = node.func.id if isinstance(node.func, ast.Name) else name
            if name in _DEVICE_CALLS:
                values.extend(node.args)
            values.extend(k.value for k in node.keywords if k.arg in _DEVICE_KEYWORDS)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_DEVICE_NAME.search(ast.unparse(t)) for t in targets):
                values.append(node.value)
        for value in values:
            for inner in ast.walk(value):
                if isinstance(inner, (ast.Constant, ast.JoinedStr)) and _device_text(inner):
                    found.add(inner.lineno)
    return found


def _device_text(node: ast.Constant | ast.JoinedStr) -> bool:
    if isinstance(node, ast.JoinedStr):
        first = node.values[0] if node.values else None
        return isinstance(first, ast.Constant) and _device_text(first)
    value = node.value
    return isinstance(value, str) and (value.startswith("cuda") or value == "nccl")


def _nested_module_lines(tree: ast.Module) -> set[int]:
    """The lines of module-level code inside an ``if`` / ``try`` block."""
    lines: set[int] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.If, ast.Try)):
            for inner in module_level([stmt]):
                if inner is not stmt:
                    lines.update(_lines([inner]))
    return lines
