"""What code of a file is CUDA-only (rule cuda_only.guard, cuda_only_spans.py):
functions decorated with ``triton.jit``/``autotune``/``heuristics`` or a CUDA-only library's
decorator; names bound to a cpp_extension ``load``/``load_inline`` result or to any call given
``.cu``/``.cuh`` sources (also through a list variable); imported ``*_cuda`` extension modules,
names imported from a ``triton`` module, from a CUDA-only library of the unsupported table or
from a module of the project that defines such code (project facts); ``self.<attr>`` set to one;
and, transitively, module-level functions and classes that use those without checking the
device themselves (optional imports do not propagate)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from functools import lru_cache

from ms_fmk_transplt.engine.project_facts import ProjectFacts
from ms_fmk_transplt.engine.rules.cuda_only.cuda_only_hints import hinted
from ms_fmk_transplt.engine.spans.shared_tree import analysable_tree
from ms_fmk_transplt.engine.tree_nodes import module_level, tree_nodes, walk_nodes
from ms_fmk_transplt.tables.unsupported_table import UnsupportedTable

CUDA_VALUE = re.compile(r"cuda(:\d+)?")  # a compared string that asks "is this CUDA?"


_TRITON_DECORATORS = frozenset({"jit", "autotune", "heuristics"})


_BUILDERS = frozenset({"load", "load_inline"})


CUDA_ONLY_CATEGORIES = frozenset({"third_party", "custom_cuda_code"})


def _cuda_only_module(module: str, table: UnsupportedTable) -> bool:
    if module.split(".")[0] == "torch":
        return False
    parts = module.split(".")
    if any("triton" in p for p in parts) or parts[-1].endswith("_cuda"):
        return True
    entry = table.module(module)
    if entry is None or entry.category not in CUDA_ONLY_CATEGORIES or entry.action == "caveat":
        return False
    return entry.category != "third_party" or table.libraries.kernel_library(module)


def dotted_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _sources(call: ast.AST) -> list[str]:
    return [
        n.value
        for n in walk_nodes([call])
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and n.value.endswith((".cu", ".cuh"))
    ]


_CU_NAME = re.compile(rb"\.cuh?[\"']")


_LISTS = (ast.List, ast.Tuple, ast.ListComp, ast.BinOp, ast.Name)


def _cu_lists(nodes: list[ast.AST]) -> dict[str, str]:
    """Names bound to ``.cu`` source lists (``sources = ['op.cpp', 'op.cu']``, also rebuilt from
    such a name: ``sources = [join(d, s) for s in sources]``), each with its first ``.cu``."""
    assigns = [n for n in nodes if type(n) is ast.Assign and isinstance(n.value, _LISTS)]
    found: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for node in assigns:
            cu = _sources(node.value) or [found[n] for n in names_in([node.value]) if n in found]
            for target in node.targets:
                if cu and isinstance(target, ast.Name) and target.id not in found:
                    found[target.id] = cu[0]
                    changed = True
    return found


def _extension_build(
    call: ast.Call, uses_cpp_extension: bool, cu_lists: dict[str, str] | None
) -> str | None:
    """What the call builds from CUDA sources; ``cu_lists``: None when the file names no
    ``.cu``/``.cuh`` source (then no argument can be one)."""
    name = dotted_name(call).rsplit(".", 1)[-1]
    first = call.args[0] if call.args else None
    if name == "import_module" and isinstance(first, ast.Constant):
        module = first.value
        if isinstance(module, str) and module.rsplit(".", 1)[-1].endswith("_cuda"):
            return f"CUDA extension module {module}"
    arguments = [*call.args, *(k.value for k in call.keywords)]
    cu = (
        (
            _sources(call)
            or [cu_lists[a.id] for a in arguments if isinstance(a, ast.Name) and a.id in cu_lists]
        )  # fmt: skip
        if cu_lists is not None
        else []
    )
    if cu:
        return f"CUDA extension built from {cu[0]}"
    if uses_cpp_extension and name in _BUILDERS:
        return f"cpp_extension.{name} module"
    return None


def _project_names(node: ast.ImportFrom, facts: ProjectFacts | None, path: str) -> dict[str, str]:
    """``from <project module> import name``: the imported names that are CUDA-only there."""
    if facts is None:
        return {}
    known = facts.names(node.module or "", node.level, path)
    found = {}
    for alias in node.names:
        if alias.name in known:
            bound = alias.asname or alias.name
            found[bound] = f"{bound} (from {node.module or '.'}: {known[alias.name]})"
    return found


_BINDING = frozenset(
    {ast.FunctionDef, ast.AsyncFunctionDef, ast.Assign, ast.Import, ast.ImportFrom}
)


def _bound_names(
    nodes: list[ast.AST],
    source: bytes,
    table: UnsupportedTable,
    facts: ProjectFacts | None,
    path: str,
) -> dict[str, str]:
    has_triton, has_cpp = b"triton" in source, b"cpp_extension" in source
    has_cu = _CU_NAME.search(source) is not None  # a .cu/.cuh source name
    found: dict[str, str] = {}
    cu_lists = _cu_lists(nodes) if has_cu else None
    nodes = [n for n in nodes if type(n) in _BINDING]  # (in order: a later binding wins)
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and has_triton:
            for d in node.decorator_list:
                dotted = dotted_name(d)
                if dotted.rsplit(".", 1)[-1] in _TRITON_DECORATORS and (
                    "triton" in dotted or "." not in dotted
                ):
                    found[node.name] = f"Triton kernel {node.name}"
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            what = _extension_build(node.value, has_cpp, cu_lists)
            if what:
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found[target.id] = f"{target.id} ({what})"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _cuda_only_module(alias.name, table):
                    bound = alias.asname or alias.name.split(".")[0]
                    found[bound] = f"{bound} (CUDA-only module {alias.name})"
        elif isinstance(node, ast.ImportFrom):
            if node.module and _cuda_only_module(node.module, table):
                for alias in node.names:
                    bound = alias.asname or alias.name
                    found[bound] = f"{bound} (from {node.module})"
            else:
                found.update(_project_names(node, facts, path))
    # @helion.kernel, @cute.jit: kernels of a CUDA-only library's decorators
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in found:
            roots = [dotted_name(d).split(".")[0] for d in node.decorator_list]
            library = next((r for r in roots if r in found and r != node.name), None)
            if library is not None:
                found[node.name] = f"{node.name} (kernel of {found[library]})"
    return found


def names_in(nodes: Iterable[ast.AST]) -> set[str]:
    """The names the code uses, and its ``self.<attribute>`` reads (as ``"self.x"``)."""
    return _names(walk_nodes(nodes))


def _names(nodes: list[ast.AST]) -> set[str]:
    found: set[str] = set()
    for n in nodes:
        if isinstance(n, ast.Name):
            found.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            if n.value.id == "self":
                found.add(f"self.{n.attr}")
    return found


_USES = "_msft_cuda_uses"  # kept on the definition's node
Uses = tuple[bool, frozenset[str], frozenset[str]]


def definition_uses(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> Uses:
    """Whether a function or class holds a CUDA condition anywhere (cuda_conditions), the names
    its body uses and those its bases use (names_in): walked once, kept on the node (the fixed
    point of cuda_only_names and the predicates ask again and again)."""
    found: Uses | None = node.__dict__.get(_USES)
    if found is None:
        body = walk_nodes(node.body)
        others = [getattr(node, f, None) for f in node._fields if f != "body"]
        rest = walk_nodes(
            [
                v
                for value in others
                for v in (value if isinstance(value, list) else [value])
                if isinstance(v, ast.AST)
            ]  # fmt: skip
        )
        conditioned = any(_conditions_at(n) for n in body) or any(_conditions_at(n) for n in rest)
        bases = names_in(node.bases) if isinstance(node, ast.ClassDef) else set()
        found = node.__dict__[_USES] = (conditioned, frozenset(_names(body)), frozenset(bases))
    return found


def _attributes(nodes: list[ast.AST], found: dict[str, str]) -> dict[str, str]:
    """``self.norm_fn = FusedRMSNormAffineFunction`` in a method: ``self.norm_fn`` stands for
    the CUDA-only code it is set to."""
    attrs: dict[str, str] = {}
    for node in nodes:
        if type(node) is ast.Assign and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                used = sorted(names_in([node.value]) & found.keys())
                if target.value.id == "self" and used:
                    attrs[f"self.{target.attr}"] = f"self.{target.attr} -> {found[used[0]]}"
    return attrs


def cuda_conditions(test: ast.AST) -> list[ast.AST]:
    """The parts of a condition that ask "is this CUDA?": device strings compared in it
    (``x.device.type == 'cuda'``, ``impl in ('cuda', 'ref')``) and ``.is_cuda``."""
    return [c for node in walk_nodes([test]) for c in _conditions_at(node)]


def _conditions_at(node: ast.AST) -> list[ast.AST]:
    """What cuda_conditions finds at this node itself."""
    if isinstance(node, ast.Compare):
        found: list[ast.AST] = []
        for side in (node.left, *node.comparators):
            items = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
            found.extend(i for i in items if is_cuda_string(i))
        return found
    return [node] if isinstance(node, ast.Attribute) and node.attr == "is_cuda" else []


def is_cuda_string(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and CUDA_VALUE.fullmatch(node.value) is not None
    )


def _optional_imports(nodes: list[ast.AST]) -> set[str]:
    """Names bound by imports inside a ``try`` that catches ImportError."""
    from ms_fmk_transplt.engine.rules.unsupported.unsupported_spans import catches_import_error

    found: set[str] = set()
    for node in nodes:
        if type(node) is ast.Try and catches_import_error(node):
            for inner in walk_nodes(node.body):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    found.update((a.asname or a.name).split(".")[0] for a in inner.names)
    return found


@lru_cache(maxsize=8)
def cuda_only_names(
    source: bytes, table: UnsupportedTable, facts: ProjectFacts | None = None, path: str = ""
) -> dict[str, str]:
    """Names of the file that stand for CUDA-only code, each with what it is (``table``: the
    unsupported table, whose CUDA-only libraries count; ``facts``: the other modules of the
    project, ``path``: this file's, for its imports from them)."""
    if not hinted(source, table, facts):
        return {}
    tree = analysable_tree(source)
    if tree is None:
        return {}  # (a file too deep to analyse is skipped when it is migrated)
    nodes = tree_nodes(tree)  # one walk for every question below
    found = _bound_names(nodes, source, table, facts, path)
    if not found:
        return found
    found.update(_attributes(nodes, found))
    defs = [
        n
        for n in module_level(tree.body)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and n.name not in found
        and not definition_uses(n)[0]
    ]
    # names of an optional import (try: ... except ImportError) do not make their users
    # CUDA-only: such code checks it has them (``if _xformers_available: ...``)
    seeds = found.keys() - _optional_imports(nodes)
    changed = True
    while changed:  # functions and classes that use CUDA-only code unconditionally
        changed = False
        for d in defs:
            if d.name in found:
                continue
            _, body_names, base_names = definition_uses(d)
            used = sorted(body_names & seeds)
            if isinstance(d, ast.ClassDef):  # by its bases: class Int8Linear(bnb.nn.Linear8bitLt)
                # (an optional import counts here: the class exists only when the import worked)
                used = used or sorted(base_names & (seeds | found.keys()))
            if used:
                found[d.name] = f"{d.name} -> {found[used[0]]}"
                seeds = seeds | {d.name}
                changed = True
    return found
