"""Span pass: a CUDA condition that selects CUDA-only code keeps its CUDA (rule cuda_only.guard).

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
from collections.abc import Iterable

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.recorder import Recorder
from ms_fmk_transplt.engine.rules.cuda_only.cuda_gates import cuda_only_gates
from ms_fmk_transplt.engine.rules.cuda_only.cuda_only_code import (
    cuda_conditions,
    cuda_only_names,
    dotted_name,
    is_cuda_string,
    names_in,
)
from ms_fmk_transplt.engine.rules.cuda_only.cuda_only_hints import has_condition, hinted
from ms_fmk_transplt.engine.rules.family_spec import Folding
from ms_fmk_transplt.engine.rules.libraries.library_rows import fold_rows_per_api
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.events import Notice
from ms_fmk_transplt.tables.unsupported_table import Entry, UnsupportedTable

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
    'and the fallback runs. So does a `"cuda"` test whose GPU arm (the body of '
    '`== "cuda"`, the `else` of `!= "cuda"`) takes a CUDA-only library path through '
    "transformers: `BitsAndBytesConfig(...)`, `load_in_8bit=`/`load_in_4bit=`, "
    '`attn_implementation="flash_attention_2"` or that string alone (data: '
    "the entries of rules/libraries.json marked `gate`; an ordinary "
    '`if device == "cuda": model.cuda()` is rewritten). Each such condition is a `caveat` '
    "row naming the CUDA-only code "
    "(port it to Ascend C or triton-ascend if the fallback is too slow); a `custom_op` "
    "registered only for `cuda` is a `manual` row (the operator has no NPU kernel). A test "
    "skipped without CUDA (`@unittest.skipUnless(torch.cuda.is_available(), ...)`, "
    "`@pytest.mark.skipif(not torch.cuda.is_available(), ...)`) whose body uses such code keeps "
    "its condition on `torch.cuda` (it stays skipped on the NPU), with a `caveat` row. A "
    "module-level predicate function (`def _eligible(x): return x.is_cuda and ...`) called in "
    "the test of such an `if` keeps its conditions too; functions decorated by a CUDA-only "
    "library (`@helion.kernel`) are CUDA-only code.",
    kind=OPEN_WORK,
)
NPU_TENSOR = declare(
    "cuda_only.npu_tensor",
    "a `.cuda()` tensor passed straight to CUDA-only code (a Triton kernel, a cpp_extension "
    "plugin, a function using one): one manual row per file and CUDA-only callee",
    "`scale(x.cuda())` where `scale` launches a `@triton.jit` kernel, `_ext.forward(x.cuda())` "
    "where `_ext` is a cpp_extension build of `.cu` sources: `.cuda()` is migrated to `.npu()`, "
    "so the CUDA-only code (as cuda_only.guard reads it from the file and the project: a "
    "function using such code without checking the device itself) receives an NPU tensor it "
    "cannot run on. The call is left as it is and gets a row naming the CUDA-only code: port "
    "it (Ascend C, triton-ascend) or call a torch / torch_npu equivalent. A function that "
    "checks the device first (`if x.is_cuda:` ... fallback) is not CUDA-only and gets no row; "
    "nor does a CUDA-only library's API, whose calls are rows of their own "
    "(libraries.cuda_only).",
    kind=OPEN_WORK,
)
CATEGORY = "custom_cuda_code"
FED = Entry(
    "cuda_only_npu_tensor",
    CATEGORY,
    "manual",
    "CUDA-only code given a tensor the migration moved to the NPU (.cuda() -> .npu()): it "
    "cannot run there; port it (Ascend C, triton-ascend) or call a torch / torch_npu "
    "equivalent on the NPU",
)
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
REGISTRARS = frozenset({"custom_op", "register_kernel", "impl", "triton_op"})


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


def guarded_code(
    region: Iterable[ast.AST],
    source: bytes,
    table: UnsupportedTable,
    ctx: Recorder | None = None,
) -> str | None:
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
        if not isinstance(d, ast.Call) or dotted_name(d).rsplit(".", 1)[-1] not in REGISTRARS:
            continue
        values = [*d.args, *(k.value for k in d.keywords if k.arg == "device_types")]
        for v in values:
            items = v.elts if isinstance(v, (ast.Tuple, ast.List, ast.Set)) else [v]
            found.extend(i for i in items if isinstance(i, ast.Constant) and is_cuda_string(i))
    return found


def guard_message(what: str) -> str:
    return f"CUDA condition kept: it selects CUDA-only code ({what}); the NPU takes the fallback"


def registration_message(what: str) -> str:
    return f'kernel registered for "cuda" only, on CUDA-only code ({what}); no NPU kernel'


FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def call_values(node: ast.Call) -> list[ast.expr]:
    return [*node.args, *(k.value for k in node.keywords)]


def moved_to_device(value: ast.expr) -> bool:
    """``x.cuda()`` / ``x.cuda(non_blocking=True)``: a tensor the migration sends to the NPU."""
    if isinstance(value, ast.Starred):
        value = value.value
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "cuda"
    )


class CudaOnlySpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        source = ctx.source.data  # a guard needs a condition, and CUDA-only code to select
        # "cuda" tests whose GPU arm takes a CUDA-only library path through transformers
        # (each scan once per file: ctx.once)
        condition = ctx.once(has_condition, source)
        gates = ctx.tables.unsupported.libraries.gate_paths
        self.library_gates = ctx.once(cuda_only_gates, source, gates) if condition else {}
        self.kernels = ctx.once(hinted, source, ctx.tables.unsupported, ctx.options.project)
        self.active = condition and (bool(self.library_gates) or self.kernels)
        self.predicates_done: set[int] = set()

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
        assert unit is not None  # set while a unit is walked
        if not self.active or not unit.header:
            return
        func = unit.node
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            d is node for d in func.decorator_list
        ):
            self._registration(func)

    def leave_Call(self, node: ast.Call) -> None:
        """``scale(x.cuda())``: CUDA-only code given a tensor migrated to the NPU."""
        if not self.kernels or not any(moved_to_device(a) for a in call_values(node)):
            return
        callee = node.func.value if isinstance(node.func, ast.Subscript) else node.func
        root = dotted_name(callee).split(".", 1)[0]
        library = (self.ctx.qname(callee) or root).split(".", 1)[0]
        if not root or library in self.tables.unsupported.module_roots:
            return  # a listed library's API (apex, flash_attn, triton.language): its own rows
        source, table, facts = self.ctx.source.data, self.tables.unsupported, self.ctx.options
        what = cuda_only_names(source, table, facts.project, self.ctx.path).get(root)
        if what is None or self.ctx.is_claimed(node):
            return
        shown = dotted_name(callee)
        message = f"{shown} is CUDA-only code ({what}) and is given a tensor moved to the NPU"
        self.ctx.unsupported(self.ctx.lines(node), shown, FED, message, NPU_TENSOR)

    def _expression(self, node: ast.AST) -> None:
        if not self.active:
            return
        unit = self.ctx.unit
        assert unit is not None  # set while a unit is walked
        self._predicate(unit.ancestors)
        if unit.header and isinstance(unit.node, ast.If) and unit.node.test is node:
            stmt = unit.node
            if negated(node) and exits(stmt.body):  # if not x.is_cuda: return fallback(x)
                parent = unit.ancestors[-1] if unit.ancestors else None
                self._guard(node, [node, *following(parent, stmt)])
            else:
                self._guard(node, [node, *stmt.body])
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            self._guard(node, [node])

    def _predicate(self, ancestors: tuple[ast.AST, ...]) -> None:
        """Inside a predicate function that selects CUDA-only code: all its conditions stay."""
        from ms_fmk_transplt.engine.rules.cuda_only.cuda_predicates import (
            kept_predicates,
            predicate_message,
        )

        func = ancestors[0] if ancestors else None  # a module-level function
        if not isinstance(func, FUNCTION_DEFS) or id(func) in self.predicates_done:
            return
        self.predicates_done.add(id(func))
        source, table = self.ctx.source.data, self.tables.unsupported
        what = kept_predicates(source, table, self.ctx.options.project, self.ctx.path).get(
            func.name
        )
        conditions = [c for c in cuda_conditions(func) if not self.ctx.is_claimed(c)]
        if what is None or not conditions:
            return
        for c in conditions:
            self.ctx.claim(c)
        message = predicate_message(func.name, what)
        self.ctx.unsupported(self.ctx.lines(conditions[0]), func.name, GUARD, message, RULE)

    def _guard(self, test: ast.AST, region: list[ast.AST]) -> None:
        conditions = [c for c in cuda_conditions(test) if not self.ctx.is_claimed(c)]
        if not conditions:
            return
        what = self._library_path(conditions) or guarded_code(
            region, self.ctx.source.data, self.tables.unsupported, self.ctx
        )
        if what is None:
            return
        for c in conditions:
            self.ctx.claim(c)
        lines = self.ctx.lines(conditions[0])
        self.ctx.unsupported(lines, what.split(" ", 1)[0], GUARD, guard_message(what), RULE)

    def _library_path(self, conditions: list[ast.AST]) -> str | None:
        """``if device == "cuda": ... load_in_4bit=True``: what the GPU arm of the test runs
        (cuda_gates.py), or None."""
        for c in conditions:
            use = self.library_gates.get((getattr(c, "lineno", 0), getattr(c, "col_offset", 0)))
            if use is not None and is_cuda_string(c):
                return f"{use} (a CUDA-only library path through transformers)"
        return None

    def _registration(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """All of ``func``'s registrations at once, when the first registering decorator is
        walked, before the function's other nodes."""
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


def fold(notices: list[Notice], done: Folding) -> list[Notice]:
    """The family's rows folded (Family.fold): the same CUDA-only call given ``.cuda()``
    tensors three times in one file is one row per file, API and action, listing the lines."""
    return fold_rows_per_api(notices, frozenset({NPU_TENSOR}), done.migrated)
