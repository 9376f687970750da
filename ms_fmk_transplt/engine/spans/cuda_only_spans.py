"""Span pass: a CUDA condition that selects CUDA-only code keeps its CUDA (rule cuda_only.guard);
the LibCST counterpart is engine/cuda_only.py.

``if impl == 'cuda' and x.device.type == 'cuda' and _init(): return _plugin.op(x)`` runs an
nvcc-built plugin when the tensor is on a GPU and a reference implementation otherwise. Migrated
to ``'npu'``, the NPU tensor would be sent to the plugin, which cannot run there; kept, the
condition is False on the NPU and the reference path runs. The same holds for ``x.is_cuda and
...`` in front of a Triton kernel and for ``torch.library.custom_op(..., device_types="cuda")``
on a function that launches one.

CUDA-only code, as read from the file itself (cuda_only_names): functions decorated with
``triton.jit``/``autotune``/``heuristics``; names bound to a cpp_extension ``load``/
``load_inline`` result or to any call given ``.cu``/``.cuh`` sources; imported ``*_cuda``
extension modules and names imported from a ``triton`` module; and, transitively, module-level
functions and classes that use those without checking the device themselves.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from functools import lru_cache

from ms_fmk_transplt.engine.spans.base import SpanConcern
from ms_fmk_transplt.engine.spans.cuda_only_hints import hinted
from ms_fmk_transplt.engine.spans.project_facts import ProjectFacts
from ms_fmk_transplt.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.tables.unsupported_table import Entry

RULE = declare(
    "cuda_only.guard",
    "a CUDA condition that selects CUDA-only code (a Triton kernel, a cpp_extension or `.cu` "
    "plugin) keeps its `cuda`, with a row naming that code",
    "`if impl == 'cuda' and x.device.type == 'cuda' and _init():` in front of an nvcc-built "
    "plugin, `if x.is_cuda:` in front of a Triton kernel launch, "
    '`@torch.library.custom_op(..., device_types="cuda")` on a function that launches one: '
    "rewritten to `npu`, such a condition would send NPU tensors into code that only runs on "
    "NVIDIA GPUs. When the guarded code (the `if` body; after `if not x.is_cuda: return ...`, "
    "the statements that follow; the other operands of the `and`; the decorated function) uses "
    "CUDA-only code of the file -- a `@triton.jit` function, a name bound to "
    "`cpp_extension.load`/`load_inline`, to a build given `.cu` sources or to "
    '`importlib.import_module("..._cuda")`, an imported `*_cuda` extension, a name imported from '
    "a `triton` module or from a CUDA-only library of the unsupported table (apex.normalization, "
    "flash_attn, xformers, ...), a function of the file "
    "that uses one of those without checking the device itself, or such code imported from "
    "another module of the project (`from .kernels import rms_norm_fused`: every Python file "
    "of the input is read once before migrating) -- the `cuda` strings compared "
    "in the condition and its `.is_cuda` stay as they are: on the NPU the condition is False "
    "and the fallback runs. Each such condition is a `caveat` row naming the CUDA-only code "
    "(port it to Ascend C or triton-ascend if the fallback is too slow); a `custom_op` "
    "registered only for `cuda` is a `manual` row (the operator has no NPU kernel). A test "
    "skipped without CUDA (`@unittest.skipUnless(torch.cuda.is_available(), ...)`, "
    "`@pytest.mark.skipif(not torch.cuda.is_available(), ...)`) whose body uses such code keeps "
    "its condition on `torch.cuda` (it stays skipped on the NPU), with a `caveat` row.",
    kind=OPEN_WORK,
)
CATEGORY = "custom_cuda_code"
GUARD = Entry(
    "cuda_only_guard",
    CATEGORY,
    "caveat",
    "condition kept on cuda: it selects CUDA-only code, so on the NPU the fallback runs; check "
    "that path, or port the CUDA-only code to the NPU (Ascend C, triton-ascend)",
)
REGISTRATION = Entry(
    "cuda_only_registration",
    CATEGORY,
    "manual",
    "operator kernel registered for cuda only, and its code is CUDA-only: register an NPU "
    "implementation (Ascend C, triton-ascend) or a fallback for the NPU",
)
CUDA_VALUE = re.compile(r"cuda(:\d+)?")  # a compared string that asks "is this CUDA?"
_TRITON_DECORATORS = frozenset({"jit", "autotune", "heuristics"})
_BUILDERS = frozenset({"load", "load_inline"})
REGISTRARS = frozenset({"custom_op", "register_kernel", "impl", "triton_op"})


CUDA_ONLY_CATEGORIES = frozenset({"third_party", "custom_cuda_code"})


def _cuda_only_module(module: str, table) -> bool:
    if module.split(".")[0] == "torch":
        return False
    parts = module.split(".")
    if any("triton" in p for p in parts) or parts[-1].endswith("_cuda"):
        return True
    entry = table.module(module)
    return entry is not None and entry.category in CUDA_ONLY_CATEGORIES


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _sources(call: ast.Call) -> list[str]:
    return [
        n.value
        for n in ast.walk(call)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and n.value.endswith((".cu", ".cuh"))
    ]


_LISTS = (ast.List, ast.Tuple, ast.ListComp, ast.BinOp, ast.Name)


def _cu_lists(tree: ast.Module) -> dict[str, str]:
    """Names bound to ``.cu`` source lists (``sources = ['op.cpp', 'op.cu']``, also rebuilt from
    such a name: ``sources = [join(d, s) for s in sources]``), each with its first ``.cu``."""
    assigns = [
        n for n in ast.walk(tree) if isinstance(n, ast.Assign) and isinstance(n.value, _LISTS)
    ]
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
    call: ast.Call, uses_cpp_extension: bool, cu_lists: dict[str, str]
) -> str | None:
    name = _dotted(call).rsplit(".", 1)[-1]
    first = call.args[0] if call.args else None
    if name == "import_module" and isinstance(first, ast.Constant):
        module = first.value
        if isinstance(module, str) and module.rsplit(".", 1)[-1].endswith("_cuda"):
            return f"CUDA extension module {module}"
    arguments = [*call.args, *(k.value for k in call.keywords)]
    cu = _sources(call) or [cu_lists[a.id] for a in arguments if isinstance(a, ast.Name)
                            and a.id in cu_lists]  # fmt: skip
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


def _bound_names(
    tree: ast.Module, source: bytes, table, facts: ProjectFacts | None, path: str
) -> dict[str, str]:
    has_triton, has_cpp = b"triton" in source, b"cpp_extension" in source
    has_cu = b".cu" in source  # a .cu/.cuh source name
    found: dict[str, str] = {}
    cu_lists = _cu_lists(tree) if has_cu else {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and has_triton:
            for d in node.decorator_list:
                dotted = _dotted(d)
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
    return found


def names_in(nodes: Iterable[ast.AST]) -> set[str]:
    """The names the code uses, and its ``self.<attribute>`` reads (as ``"self.x"``)."""
    found: set[str] = set()
    for root in nodes:
        for n in ast.walk(root):
            if isinstance(n, ast.Name):
                found.add(n.id)
            elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
                if n.value.id == "self":
                    found.add(f"self.{n.attr}")
    return found


def _attributes(tree: ast.Module, found: dict[str, str]) -> dict[str, str]:
    """``self.norm_fn = FusedRMSNormAffineFunction`` in a method: ``self.norm_fn`` stands for
    the CUDA-only code it is set to."""
    attrs: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                used = sorted(names_in([node.value]) & found.keys())
                if target.value.id == "self" and used:
                    attrs[f"self.{target.attr}"] = f"self.{target.attr} -> {found[used[0]]}"
    return attrs


def cuda_conditions(test: ast.AST) -> list[ast.AST]:
    """The parts of a condition that ask "is this CUDA?": device strings compared in it
    (``x.device.type == 'cuda'``, ``impl in ('cuda', 'ref')``) and ``.is_cuda``."""
    found: list[ast.AST] = []
    for node in ast.walk(test):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                items = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                found.extend(i for i in items if _is_cuda_string(i))
        elif isinstance(node, ast.Attribute) and node.attr == "is_cuda":
            found.append(node)
    return found


def _is_cuda_string(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and CUDA_VALUE.fullmatch(node.value) is not None
    )


def _optional_imports(tree: ast.Module) -> set[str]:
    """Names bound by imports inside a ``try`` that catches ImportError."""
    from ms_fmk_transplt.engine.spans.unsupported_spans import catches_import_error

    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and catches_import_error(node):
            for inner in (n for stmt in node.body for n in ast.walk(stmt)):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    found.update((a.asname or a.name).split(".")[0] for a in inner.names)
    return found


@lru_cache(maxsize=8)
def cuda_only_names(
    source: bytes, table, facts: ProjectFacts | None = None, path: str = ""
) -> dict[str, str]:
    """Names of the file that stand for CUDA-only code, each with what it is (``table``: the
    unsupported table, whose CUDA-only libraries count; ``facts``: the other modules of the
    project, ``path``: this file's, for its imports from them)."""
    if not hinted(source, table, facts):
        return {}
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    found = _bound_names(tree, source, table, facts, path)
    if not found:
        return found
    found.update(_attributes(tree, found))
    defs = [
        n
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and n.name not in found
        and not cuda_conditions(n)
    ]
    # names of an optional import (try: ... except ImportError) do not make their users
    # CUDA-only: such code checks it has them (``if _xformers_available: ...``)
    seeds = found.keys() - _optional_imports(tree)
    changed = True
    while changed:  # functions and classes that use CUDA-only code unconditionally
        changed = False
        for d in defs:
            if d.name in found:
                continue
            used = sorted(names_in(d.body) & seeds)
            if used:
                found[d.name] = f"{d.name} -> {found[used[0]]}"
                seeds = seeds | {d.name}
                changed = True
    return found


def negated(test: ast.AST) -> bool:
    """``not x.is_cuda`` / ``x.device.type != "cuda"``: the CUDA path is what follows."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return True
    return isinstance(test, ast.Compare) and all(
        isinstance(op, (ast.NotEq, ast.NotIn)) for op in test.ops
    )


def exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


def following(parent: ast.AST | None, node: ast.AST) -> list[ast.stmt]:
    """The statements after ``node`` in the block of ``parent`` that holds it."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None) or []
        for i, stmt in enumerate(block):
            if stmt is node:
                return block[i + 1 :]
    return []


def guarded_code(region: Iterable[ast.AST], source: bytes, table, ctx=None) -> str | None:
    """What CUDA-only code the region (a condition and what it guards) uses, if any (``ctx``:
    the pass's context, for the project's facts and the file's path)."""
    facts = ctx.options.project if ctx is not None else None
    known = cuda_only_names(source, table, facts, ctx.path if ctx is not None else "")
    if not known:
        return None
    used = sorted(names_in(region) & known.keys())
    return known[used[0]] if used else None


def registrations(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Constant]:
    """The ``"cuda"`` strings of kernel registrations decorating ``func``
    (``custom_op(..., device_types="cuda")``, ``register_kernel("cuda")``)."""
    found: list[ast.Constant] = []
    for d in func.decorator_list:
        if not isinstance(d, ast.Call) or _dotted(d).rsplit(".", 1)[-1] not in REGISTRARS:
            continue
        values = [*d.args, *(k.value for k in d.keywords if k.arg == "device_types")]
        for v in values:
            items = v.elts if isinstance(v, (ast.Tuple, ast.List, ast.Set)) else [v]
            found.extend(i for i in items if _is_cuda_string(i))  # type: ignore[misc]
    return found


def guard_message(what: str) -> str:
    return f"CUDA condition kept: it selects CUDA-only code ({what}); the NPU takes the fallback"


def registration_message(what: str) -> str:
    return f'kernel registered for "cuda" only, on CUDA-only code ({what}); no NPU kernel'


class CudaOnlySpans(SpanConcern):
    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.active = hinted(ctx.source.data, ctx.tables.unsupported, ctx.options.project)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        self._expression(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        self._expression(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._expression(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        self._expression(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        if self.active:
            self._guard(node.test, [node.test, node.body])

    def visit_Call(self, node: ast.Call) -> None:
        unit = self.ctx.unit
        if not self.active or not unit.header:
            return
        func = unit.node
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            d is node for d in func.decorator_list
        ):
            self._registration(func)

    def _expression(self, node: ast.AST) -> None:
        if not self.active:
            return
        unit = self.ctx.unit
        if unit.header and isinstance(unit.node, ast.If) and unit.node.test is node:
            stmt = unit.node
            if negated(node) and exits(stmt.body):  # if not x.is_cuda: return fallback(x)
                parent = unit.ancestors[-1] if unit.ancestors else None
                self._guard(node, [node, *following(parent, stmt)])
            else:
                self._guard(node, [node, *stmt.body])
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            self._guard(node, [node])

    def _guard(self, test: ast.AST, region: list[ast.AST]) -> None:
        conditions = [c for c in cuda_conditions(test) if not self.ctx.is_claimed(c)]
        if not conditions:
            return
        what = guarded_code(region, self.ctx.source.data, self.tables.unsupported, self.ctx)
        if what is None:
            return
        for c in conditions:
            self.ctx.claim(c)
        lines = self.ctx.lines(conditions[0])
        self.ctx.unsupported(lines, what.split(" ", 1)[0], GUARD, guard_message(what), RULE)

    def _registration(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """All of ``func``'s registrations at once, when the first registering decorator is
        walked (as the LibCST pass does on entering the function)."""
        strings = [s for s in registrations(func) if not self.ctx.is_claimed(s)]
        if not strings:
            return
        what = guarded_code(func.body, self.ctx.source.data, self.tables.unsupported, self.ctx)
        if what is None:
            return
        for s in strings:
            self.ctx.claim(s)
        lines = self.ctx.lines(strings[0])
        self.ctx.unsupported(lines, func.name, REGISTRATION, registration_message(what), RULE)
