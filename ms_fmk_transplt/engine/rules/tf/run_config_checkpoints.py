"""Span pass, a RunConfig's checkpoints kept as RunConfig sets them on NPURunConfig: the
adapter's NPURunConfig turns ``save_checkpoints_steps=None`` + ``save_checkpoints_secs=None``
(given so, or not given) into a checkpoint every 100 steps
(tf_adapter/python/npu_bridge/estimator/npu/npu_config.py: ``if save_checkpoints_secs==None
and save_checkpoints_steps==None: save_checkpoints_steps=100``), where
``tf.estimator.RunConfig`` saves none, or every 600 s when neither is given (rule
tf.run_config_checkpoints, declared here; the rewrites are tf.run_config changes)."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.rules.tf.tf_edits import tf_record, tf_row
from ms_fmk_transplt.engine.spans.span_context import SpanContext

RUN_CONFIG_CHECKPOINTS = declare(
    "tf.run_config_checkpoints",
    "a RunConfig whose checkpoints may be off through an expression that could change when "
    "evaluated again (`save_checkpoints_steps=steps() if rank == 0 else None`): one caveat "
    "row, NPURunConfig would save every 100 steps there",
    "`tf.estimator.RunConfig` saves no checkpoint when `save_checkpoints_steps` and "
    "`save_checkpoints_secs` are both None (one None and the other not given counts as both), "
    "and every 600 s when neither is given (tensorflow_estimator's run_config.py); the "
    "adapter's `NPURunConfig` cannot tell the two apart (both default to None) and turns both "
    "into a checkpoint every 100 steps (tf_adapter/python/npu_bridge/estimator/npu/"
    "npu_config.py: `if save_checkpoints_secs==None and save_checkpoints_steps==None: "
    "save_checkpoints_steps=100`), although its docstring refers to RunConfig's settings "
    "(older releases spell out RunConfig's 600 s default there). "
    "tf.run_config therefore appends to the NPURunConfig call what RunConfig would have set, "
    "with `RunConfig.replace` (which NPUEstimator itself calls on its config; it sets both "
    "after NPURunConfig's constructor and checks them as RunConfig's constructor does): "
    "`.replace(save_checkpoints_steps=None, save_checkpoints_secs=None)` when both are None "
    "as written; `.replace(save_checkpoints_steps=None, save_checkpoints_secs=600)` when "
    "neither is given (also on the `config=NPURunConfig()` given to an Estimator created "
    "without one); and, when one may be None (a conditional expression with a None arm: "
    "DeepLearningExamples' `save_checkpoints_steps=FLAGS.save_checkpoints_steps if "
    "master_process else None`), `.replace(save_checkpoints_steps=<the same expression>, "
    "save_checkpoints_secs=<as written, or None>)`, so each process gets what RunConfig gives "
    "it. The expression is repeated only when evaluating it again gives the same value: "
    "names, attributes, constants, comparisons, arithmetic, boolean and conditional "
    "expressions, and calls without arguments of Horovod's rank getters (`hvd.rank()`, "
    "`hvd.size()`, `hvd.local_rank()`, `hvd.local_size()`, migrated to the adapter's "
    "`get_npu_rank_id()`, ...) or the adapter's own. Any other call (or a comment inside) "
    "leaves the call as it is with this row: on the processes where the value is None, "
    "NPURunConfig would make every rank write checkpoints into the same model_dir.",
    kind=OPEN_WORK,
)
_STEPS, _SECS = "save_checkpoints_steps", "save_checkpoints_secs"
_KEEP_OFF = f".replace({_STEPS}=None, {_SECS}=None)"
DEFAULT_SECS = f".replace({_STEPS}=None, {_SECS}=600)"  # (RunConfig's default)


def checkpoint_settings(ctx: SpanContext, node: ast.Call, params: Sequence[str], rule: str) -> None:
    """A ``tf.estimator.RunConfig(...)`` call becoming NPURunConfig (``params``: RunConfig's
    parameters in order): ``.replace(...)`` with the checkpoint settings RunConfig would have
    (a change of ``rule``): off as written, neither given (600 s), or one that may be None and
    can be evaluated again; a setting that may be None otherwise is a caveat row."""
    if any(kw.arg is None for kw in node.keywords):
        return  # (**kwargs: what it holds is not known)
    given: dict[str, ast.expr] = {kw.arg: kw.value for kw in node.keywords if kw.arg}
    for index, arg in enumerate(node.args[: len(params)]):
        given.setdefault(params[index], arg)
    kinds = {name: _kind(given.get(name)) for name in (_STEPS, _SECS)}
    if set(kinds.values()) == {"missing"}:
        _append(
            ctx,
            node,
            rule,
            DEFAULT_SECS,
            f"checkpoints every 600 s as RunConfig's default: {DEFAULT_SECS} added "
            "(NPURunConfig saves every 100 steps when neither is given)",
        )
    elif set(kinds.values()) <= {"missing", "none"} and "none" in kinds.values():
        _append(
            ctx,
            node,
            rule,
            _KEEP_OFF,
            f"checkpoints stay off: {_KEEP_OFF} added (NPURunConfig saves every 100 steps "
            "when both are None)",
        )
    elif "maybe" in kinds.values() and "value" not in kinds.values():
        name = _STEPS if kinds[_STEPS] == "maybe" else _SECS
        value = given[name]
        texts = {n: ctx.code(given[n]) if n in given else "None" for n in (_STEPS, _SECS)}
        if all(_pure(ctx, given[n]) for n in (_STEPS, _SECS) if n in given) and all(
            "\n" not in t or not any(c in t for c in "#'\"\\") for t in texts.values()
        ):
            texts = {n: " ".join(t.split()) for n, t in texts.items()}  # (one line)
            keep = f".replace({_STEPS}={texts[_STEPS]}, {_SECS}={texts[_SECS]})"
            message = (
                f"checkpoints as RunConfig gives them: {keep} added ({name} may be None, "
                "where NPURunConfig would save every 100 steps instead of none)"
            )
            _append(ctx, node, rule, keep, message)
            return
        tf_row(
            ctx,
            value,
            RUN_CONFIG_CHECKPOINTS,
            f"NPURunConfig({name}=...)",
            "caveat",
            f"NPURunConfig saves a checkpoint every 100 steps when {_STEPS} and {_SECS} are "
            "both None (RunConfig saves none), so where this is None (e.g. the ranks other than 0) "
            "every process writes checkpoints into model_dir: take the argument out of "
            f"NPURunConfig(...) and append .replace({name}=<this expression>, "
            f"{_SECS if name == _STEPS else _STEPS}=None) to the call",
            f"NPURunConfig({name}=...): may be None, where NPURunConfig saves every 100 steps "
            "instead of no checkpoint",
        )


def _append(ctx: SpanContext, node: ast.Call, rule: str, text: str, message: str) -> None:
    """``text`` after the call, a change of ``rule`` (Before/After shortened to the call's
    name when the call is too long for both to show the end)."""
    before = ctx.snippet(node)
    end = ctx.source.span(node)[1]
    ctx.replace(end, end, text, checked=True)
    after = ctx.snippet(node)
    if after == before:
        before, after = "NPURunConfig(...)", f"NPURunConfig(...){text}"
    tf_record(ctx, node, rule, message, before, after)


_RANKS = frozenset({"rank", "local_rank", "size", "local_size"})
_NPU_RANKS = frozenset(
    {"get_npu_rank_id", "get_npu_local_rank_id", "get_npu_rank_size", "get_npu_local_rank_size"}
)
_PURE = (
    ast.Name,
    ast.Attribute,
    ast.Constant,
    ast.Compare,
    ast.BoolOp,
    ast.UnaryOp,
    ast.BinOp,
    ast.IfExp,
    ast.expr_context,
    ast.cmpop,
    ast.boolop,
    ast.unaryop,
    ast.operator,
)


def _pure(ctx: SpanContext, value: ast.expr) -> bool:
    """An expression that gives the same value when evaluated again right after: names,
    attributes, constants, comparisons, arithmetic, boolean and conditional expressions, and
    calls without arguments of Horovod's rank getters (``hvd.rank()``, ``hvd.size()``, ...) or
    the adapter's (``get_npu_rank_id()``, ...)."""
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            if node.args or node.keywords or not _rank_getter(ctx, node.func):
                return False
        elif not isinstance(node, _PURE):
            return False
    return True


def _rank_getter(ctx: SpanContext, func: ast.expr) -> bool:
    name = ctx.qname(func) or ""
    if isinstance(func, ast.Name):
        return func.id in _NPU_RANKS and name in (func.id, f"npu_bridge.npu_init.{func.id}")
    return (
        isinstance(func, ast.Attribute)
        and func.attr in _RANKS
        and name.startswith("horovod.")
        and name.count(".") == 2
    )


def _kind(value: ast.expr | None) -> str:
    """``missing``, ``none`` (None as written), ``maybe`` (a conditional expression with a
    None arm) or ``value``."""
    if value is None:
        return "missing"
    if isinstance(value, ast.Constant) and value.value is None:
        return "none"
    if isinstance(value, ast.IfExp):
        arms = {_kind(value.body), _kind(value.orelse)}
        return "none" if arms == {"none"} else "maybe" if arms & {"none", "maybe"} else "value"
    return "value"
