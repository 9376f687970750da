"""Span pass, code that already uses the adapter, checked against its options
(rules/tf_adapter.json): an option NPURunConfig, ExperimentalConfig, DumpConfig,
ProfilingConfig or MemoryConfig does not take, a documented-invalid value, a session option
(``custom_op.parameter_map["name"]``) the adapter does not read or with an invalid value, an
option that needs another one that is never set, an option the adapter's documentation of
npu_ops.initialize_system says must be set in the session running it (rule tf.npu_option,
declared here)."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.rules.tf.tf_edits import CATEGORY, tf_row
from ms_fmk_transplt.engine.rules.tf.tf_files import tf_facts, tf_of
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.tables.tf_adapter_table import UNKNOWN
from ms_fmk_transplt.tables.unsupported_table import Entry

NPU_OPTION = declare(
    "tf.npu_option",
    "an Ascend TF adapter option with an unknown name or a documented-invalid value: one row",
    "Options given to NPURunConfig, ExperimentalConfig, DumpConfig, ProfilingConfig, "
    "MemoryConfig, or set on the NpuOptimizer's `parameter_map` of a session config, are "
    "checked against the option table built from the adapter's documentation and source "
    "(rules/tf_adapter.json; `scripts/check_tf_adapter.py` checks it against the source): an "
    "unknown name (with the closest known one), a value outside the documented ones (naming "
    "them), an option that needs another that the file never sets (profiling's fp_point / "
    "bp_point, dump_path), and, in a file that runs initialize_system itself, an option the "
    "documentation says must be set in that session but is given to NPURunConfig. Values the "
    "code computes are not checked, only their names.",
    kind=OPEN_WORK,
)
CONSTRUCTORS = (
    "NPURunConfig",
    "ExperimentalConfig",
    "DumpConfig",
    "ProfilingConfig",
    "MemoryConfig",
)
_FIELDS = {"s": str, "b": bool, "i": int, "f": float}


def constant(node: ast.expr) -> object:
    """The Python value of a literal (``b"x"`` and ``tf.compat.as_bytes("x")`` as ``"x"``), or
    UNKNOWN."""
    if isinstance(node, ast.Constant):
        value = node.value
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = constant(node.operand)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in ("as_bytes", "as_str", "as_text", "str", "bytes"):
            return constant(node.args[0])
    return UNKNOWN


class TfOptionSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        self.options = self.tables.tf_adapter
        self.init_only = frozenset(
            name for name, o in self.options.options.items() if "initialize_system" in o.places
        )

    def leave_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        if tf_of(ctx) is None:
            return
        place = ctx.last_name(node.func)
        if place not in CONSTRUCTORS:
            return
        for kw in node.keywords:
            if kw.arg is None:
                continue
            value = constant(kw.value)
            tf_facts(ctx).option_values.setdefault(place, {})[kw.arg] = value
            tf_facts(ctx).option_lines.setdefault(place, ctx.lines(node))
            self._check(kw, kw.arg, value, place)
            if (
                place == "NPURunConfig"
                and tf_facts(ctx).calls_initialize_system
                and (kw.arg in self.init_only)
            ):
                tf_row(
                    ctx,
                    kw,
                    NPU_OPTION,
                    f"NPURunConfig({kw.arg}=...)",
                    "manual",
                    f"this file runs initialize_system: set {kw.arg} in the session config of "
                    "the session that runs it (custom_op.parameter_map), as the adapter requires",
                )

    def leave_Assign(self, node: ast.Assign) -> None:
        ctx = self.ctx
        if tf_of(ctx) is None:
            return
        for target in node.targets:
            name = _parameter_name(target)
            if name is None:
                continue
            assert isinstance(target, ast.Attribute)
            value = constant(node.value)
            kind = _FIELDS[target.attr]
            if value is not UNKNOWN and not isinstance(value, kind):
                value = UNKNOWN
            tf_facts(ctx).option_values.setdefault("session", {})[name] = value
            tf_facts(ctx).option_lines.setdefault("session", ctx.lines(node))
            self._check(target, name, value, "session")

    def _check(self, node: ast.AST, name: str, value: object, place: str) -> None:
        problem = self.options.problem(name, value, place)
        if problem is not None:
            tf_row(self.ctx, node, NPU_OPTION, f"{place}: {name}", "manual", problem, problem)


def _parameter_name(target: ast.expr) -> str | None:
    """``"precision_mode"`` of ``custom_op.parameter_map["precision_mode"].s`` (a target)."""
    if not isinstance(target, ast.Attribute) or target.attr not in _FIELDS:
        return None
    sub = target.value
    if not isinstance(sub, ast.Subscript) or not isinstance(sub.value, ast.Attribute):
        return None
    if sub.value.attr != "parameter_map":
        return None
    key = sub.slice
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value
    return None


def check_requirements(ctx: SpanContext) -> None:
    """Once the file is walked: the options of each place that need one the file never sets
    (one row at the first option of that place)."""
    tf = tf_of(ctx)
    if tf is None:
        return
    table = ctx.tables.tf_adapter
    for place, values in tf.option_values.items():
        for problem in table.missing_requirements(set(values), values):
            api = f"{place} options"
            entry = Entry(api, CATEGORY, "manual", problem)
            ctx.unsupported(tf.option_lines[place], api, entry, problem, NPU_OPTION)


def option_set(names: Iterable[str]) -> str:
    """The message of a change that sets these --npu-option values."""
    return f"--npu-option {', '.join(names)} set"
