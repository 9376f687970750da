"""Device and backend strings that are left because the code beside them already names the NPU
(part of rule device_strings.literal, and of distributed.nccl_backend for ``"nccl"``).

Device-agnostic code often lists every device itself: ``if name == "cuda": ... elif name ==
"npu": ...``, ``("cuda", "npu", "xpu")``, an enum table with ``CUDA = ("cuda", "GPU", "nccl")``
beside ``NPU = ("npu", "NPU", "hccl")``, a dict with both keys. Rewriting its ``"cuda"`` would
add a second NPU arm that shadows the one written for the NPU (the first match wins) and remove
the CUDA one. Option names are not devices either: ``{"cuda": cuda}`` (a flag named ``cuda``).
These literals are found on the stdlib tree of the whole file and kept as they are.
(Other dict keys and lookup keys, ``{"torch": ..., "cuda": torch.cuda.get_rng_state()}``,
``cfg.pop("cuda")``, are decided where the rule meets them: device_strings/device_labels.py.)
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache

from ms_fmk_transplt.engine.scope_model import (
    FUNCTIONS,
    Scope,
    UnsupportedScope,
    chosen_name,
    full_name,
)
from ms_fmk_transplt.engine.scopes import Scopes
from ms_fmk_transplt.engine.spans.shared_tree import tree_of
from ms_fmk_transplt.engine.tree_nodes import tree_nodes, walk_nodes

CUDA_STRING = re.compile(r"cuda(:\d+)?|nccl")  # what device_strings/distributed would rewrite
NPU_STRINGS = frozenset({"npu", "hccl"})
# keys that make a dict one keyed by device type (its "cuda" is a device: device_labels.py)
DEVICE_NAMES = frozenset(
    {"cpu", "cuda", "npu", "mps", "xla", "xpu", "hpu", "meta", "mlu", "ipu", "neuron", "tpu", "gpu"}
)
# what a file without NPU siblings lacks: a quoted "npu" or "hccl", a "cuda": key, an
# npu_available( or npu.is_available( call (_hinted: each searched from its word, which the
# regular expression engine finds fast; one pattern starting with the quote took 1.8 s over
# diffusers' 45 MB)
_QUOTED_HINTS = (
    re.compile(rb"npu[\"']"),
    re.compile(rb"hccl[\"']"),
    re.compile(rb"cuda[\"']\s*:"),
)
_HINT_CALLS = re.compile(rb"npu_available\s*\(|npu\.is_available\s*\(")
# the calls that test for an NPU / a CUDA device, an arm's test (or an `and` of it) as an
# NPU (CUDA) arm's "npu" ("cuda") comparison is; by qualified name through the imports (a
# function of the project's own, whatever its name, is not one of them): torch, torch_npu,
# transformers (utils/import_utils.py: is_torch_npu_available, is_torch_cuda_available, also
# exported by transformers and transformers.utils) and accelerate (utils/imports.py:
# is_npu_available, is_cuda_available, also exported by accelerate.utils)
NPU_TESTS = frozenset(
    {
        "torch.npu.is_available",
        "torch_npu.npu.is_available",
        "transformers.is_torch_npu_available",
        "transformers.utils.is_torch_npu_available",
        "transformers.utils.import_utils.is_torch_npu_available",
        "accelerate.utils.is_npu_available",
        "accelerate.utils.imports.is_npu_available",
    }
)
CUDA_TESTS = frozenset(
    {
        "torch.cuda.is_available",
        "transformers.is_torch_cuda_available",
        "transformers.utils.is_torch_cuda_available",
        "transformers.utils.import_utils.is_torch_cuda_available",
        "accelerate.utils.is_cuda_available",
        "accelerate.utils.imports.is_cuda_available",
    }
)
_TEST_NAMES = frozenset(name.rsplit(".", 1)[1] for name in NPU_TESTS | CUDA_TESTS)

Key = tuple[int, int]  # (line, column) of an ast.Constant: its position in the source


def _strings(node: ast.AST | None) -> list[ast.Constant]:
    if node is None:
        return []
    return [
        n for n in walk_nodes([node]) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def _cuda(nodes: list[ast.Constant]) -> list[ast.Constant]:
    return [
        n
        for n in nodes
        if isinstance(n.value, str) and CUDA_STRING.fullmatch(n.value.removesuffix(":"))
    ]


def _names_npu(nodes: list[ast.Constant]) -> bool:
    return any(isinstance(n.value, str) and n.value.removesuffix(":") in NPU_STRINGS for n in nodes)


def _chain_arms(node: ast.If) -> list[tuple[ast.expr, list[ast.stmt]]]:
    """The (test, body) of each arm of an if/elif chain."""
    arms = [(node.test, node.body)]
    while len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
        node = node.orelse[0]
        arms.append((node.test, node.body))
    return arms


def _compared(test: ast.expr) -> list[ast.Constant]:
    """The strings a test compares with: ``x == "cuda"``, ``x.startswith("cuda:")``."""
    found: list[ast.Constant] = []
    for node in walk_nodes([test]):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                found.extend(_strings(side))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("startswith", "endswith"):
                found.extend(s for arg in node.args for s in _strings(arg))
    return found


class _DeviceTests:
    """Which arms of the file's if-chains test for an NPU or a CUDA device by calling a
    function that says so (``elif is_torch_npu_available():``); the scopes of the file are
    built on the first arm that calls a function of such a name."""

    def __init__(self, tree: ast.Module, source: bytes) -> None:
        self.tree, self.walrus = tree, b":=" in source
        self.scopes: Scopes | None = None
        self.where: dict[int, Scope] = {}  # id(an if statement) -> the scope it is in

    def of(self, test: ast.expr, node: ast.If, tests: frozenset[str]) -> bool:
        """Whether ``test`` (of the chain ``node`` starts) is, or is an ``and`` of, a call of
        one of ``tests``."""
        both = isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)
        parts = test.values if isinstance(test, ast.BoolOp) and both else [test]
        for part in parts:
            func = part.func if isinstance(part, ast.Call) else None
            if isinstance(func, ast.Name) and func.id not in _TEST_NAMES:
                continue
            if isinstance(func, ast.Attribute) and func.attr not in _TEST_NAMES:
                continue
            if isinstance(func, (ast.Name, ast.Attribute)) and self._name(func, node) in tests:
                return True
        return False

    def _name(self, func: ast.Name | ast.Attribute, node: ast.If) -> str:
        if self.scopes is None:
            self.scopes = Scopes(self.tree, walrus=self.walrus)
            self.where = _if_scopes(self.tree, self.scopes)
        scope = self.where.get(id(node), self.scopes.global_scope)
        top = func if isinstance(func, ast.Attribute) else None
        try:
            names = self.scopes.qualified_names(func, scope, top)
        except UnsupportedScope:  # (a scope the model does not know: not a known test)
            return ""
        return chosen_name(names, full_name(func)) or ""

    def release(self) -> None:
        if self.scopes is not None:
            self.scopes.release()
            self.scopes, self.where = None, {}


def _if_scopes(tree: ast.Module, scopes: Scopes) -> dict[int, Scope]:
    """The scope of each if statement of the file (the function or class body it is in)."""
    found: dict[int, Scope] = {}
    todo: list[tuple[ast.AST, Scope]] = [(tree, scopes.global_scope)]
    while todo:
        node, scope = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (*FUNCTIONS, ast.ClassDef)):
                todo.append((child, scopes.scope_of(child, scope)))
            elif not isinstance(child, ast.expr):  # (an expression holds no statement)
                if isinstance(child, ast.If):
                    found[id(child)] = scope
                todo.append((child, scope))
    return found


def _dict_keys(node: ast.Dict) -> list[ast.Constant]:
    """The kept keys of a dict display (and their values, beside an "npu" key)."""
    keys = [k for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    cuda = _cuda(keys)
    if _names_npu(keys):  # {"cuda": ..., "npu": ...}: the keys and their values stay
        values = [v for k, v in zip(node.keys, node.values) if k in cuda]
        return cuda + [s for v in values for s in _cuda(_strings(v))]
    return [
        k
        for k, v in zip(node.keys, node.values)
        if k in cuda and isinstance(v, ast.Name) and v.id == k.value  # {"cuda": cuda}: an option
    ]


def _kept(tree: ast.Module, source: bytes) -> tuple[list[ast.Constant], set[int]]:
    """The literals that stay, and the lines of the CUDA arms of if-chains with an NPU arm."""
    kept: list[ast.Constant] = []
    arm_lines: set[int] = set()
    tests = _DeviceTests(tree, source)
    for node in tree_nodes(tree):
        if isinstance(node, ast.If):
            arms = _chain_arms(node)
            compared = [s for test, _ in arms for s in _compared(test)]
            if _names_npu(compared) or any(tests.of(t, node, NPU_TESTS) for t, _ in arms):
                kept.extend(_cuda(compared))
                arm_lines.update(_cuda_arm_lines(arms, node, tests))
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = [e for e in node.elts if isinstance(e, ast.Constant)]
            items = [e for e in items if isinstance(e.value, str)]
            if _names_npu(items):
                kept.extend(_cuda(items))
        elif isinstance(node, ast.Dict):
            kept.extend(_dict_keys(node))
        elif isinstance(node, ast.ClassDef):
            values = [s.value for s in node.body if isinstance(s, (ast.Assign, ast.AnnAssign))]
            strings = [s for v in values for s in _strings(v)]
            if _names_npu(strings):  # an enum table that has an NPU member
                kept.extend(_cuda(strings))
    tests.release()
    return kept, arm_lines


def _cuda_arm_lines(
    arms: list[tuple[ast.expr, list[ast.stmt]]], node: ast.If, tests: _DeviceTests
) -> set[int]:
    """The lines of the arms that compare with "cuda" (their bodies) or call a CUDA test
    (their tests too: ``if torch.cuda.is_available():`` stays as written)."""
    lines: set[int] = set()
    for test, body in arms:
        called = tests.of(test, node, CUDA_TESTS)
        if called:
            lines.update(range(test.lineno, (test.end_lineno or test.lineno) + 1))
        if (called or _cuda(_compared(test))) and body:
            last = body[-1].end_lineno or body[-1].lineno
            lines.update(range(body[0].lineno, last + 1))
    return lines


def _hinted(source: bytes) -> bool:
    """Whether ``source`` holds one of the hints (above) of an NPU sibling."""
    for pattern in _QUOTED_HINTS:
        for found in pattern.finditer(source):
            if found.start() and source[found.start() - 1] in b"\"'":
                return True
    return _HINT_CALLS.search(source) is not None


@lru_cache(maxsize=8)
def _siblings(source: bytes) -> tuple[list[Key], frozenset[int]]:
    """One walk of the file for kept_device_strings and cuda_arm_lines (positions in bytes).
    The second is asked once the pass is over, when the span pass's tree is no longer shared:
    cached here, the file is not parsed again."""
    if not _hinted(source):
        return [], frozenset()
    try:
        tree = tree_of(source)
    except (SyntaxError, ValueError):
        return [], frozenset()
    kept, arm_lines = _kept(tree, source)
    return [(n.lineno, n.col_offset) for n in kept], frozenset(arm_lines)


@lru_cache(maxsize=8)
def kept_device_strings(source: bytes) -> frozenset[Key]:
    """Positions (line, byte column, as ``ast`` counts them) of the ``"cuda"``/``"nccl"``
    literals of the file that stay as they are."""
    return frozenset(_siblings(source)[0])


# "cuda" and a name holding "accelerator" on one line (the shapes _accelerator_literals reads)
ACCELERATOR_LINE = re.compile(
    rb"accelerator[^\n]*[\"']cuda[\"']|[\"']cuda[\"'][^\n]*accelerator", re.I
)
# the file uses Lightning (its Trainer / Fabric take accelerator=): a parameter or attribute
# named accelerator elsewhere (trl's accelerator_type, sam2's) is a torch device type
LIGHTNING_IMPORT = re.compile(
    rb"(?:^|[\r\n])[ \t]*(?:import|from)[ \t]+(?:lightning|pytorch_lightning|lightning_fabric)\b"
)


def _named(name: str) -> bool:
    return "accelerator" in name.lower()


def _identifiers(node: ast.AST) -> list[str]:
    return [
        n.id if isinstance(n, ast.Name) else n.attr
        for n in walk_nodes([node])
        if isinstance(n, (ast.Name, ast.Attribute))
    ]


def _accelerator_literals(tree: ast.Module) -> list[ast.Constant]:
    """ "cuda" literals that name a Lightning accelerator by where they flow: assigned to, compared
    with, or the default / annotation of a name containing ``accelerator``."""
    found: list[ast.Constant] = []
    for node in tree_nodes(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and any(_named(i) for t in targets for i in _identifiers(t)):
                found.extend(_cuda(_strings(node.value)))
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, (ast.Name, ast.Attribute)) and _named(_identifiers(s)[0])
                   for s in sides):  # fmt: skip
                found.extend(c for s in sides for c in _cuda(_strings(s)))
        elif isinstance(node, ast.arguments):
            params = [*node.posonlyargs, *node.args]
            defaults = [None] * (len(params) - len(node.defaults)) + list(node.defaults)
            pairs = [*zip(params, defaults), *zip(node.kwonlyargs, node.kw_defaults)]
            for param, default in pairs:
                if _named(param.arg):
                    found.extend(_cuda(_strings(default) + _strings(param.annotation)))
    return [n for n in found if n.value == "cuda"]


@lru_cache(maxsize=8)
def accelerator_strings(source: bytes) -> frozenset[Key]:
    """Positions of the ``"cuda"`` literals that name a Lightning accelerator, not a device, in
    a file that imports Lightning."""
    if b"ccelerator" not in source or ACCELERATOR_LINE.search(source) is None:
        return frozenset()
    if LIGHTNING_IMPORT.search(source) is None:
        return frozenset()
    try:
        tree = tree_of(source)
    except (SyntaxError, ValueError):
        return frozenset()
    return frozenset((n.lineno, n.col_offset) for n in _accelerator_literals(tree))


def cuda_arm_lines(source: bytes) -> frozenset[int]:
    """Lines of the CUDA arm of an if-chain that has an NPU arm of its own (``if device_type ==
    "cuda": return torch.cuda.is_available() elif device_type == "npu": ...``): that arm runs
    only on a GPU, so it stays as written; migrating it would shadow the NPU arm's work."""
    if b"cuda" not in source:
        return frozenset()
    return _siblings(source)[1]
