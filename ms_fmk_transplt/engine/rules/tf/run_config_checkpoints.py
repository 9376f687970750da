"""Span pass, a RunConfig's checkpoints kept off on NPURunConfig: the adapter's NPURunConfig
turns ``save_checkpoints_steps=None`` + ``save_checkpoints_secs=None`` into a checkpoint every
100 steps (tf_adapter/python/npu_bridge/estimator/npu/npu_config.py: ``if
save_checkpoints_secs==None and save_checkpoints_steps==None: save_checkpoints_steps=100``),
where ``tf.estimator.RunConfig`` saves none (rule tf.run_config_checkpoints, declared here;
the rewrite is a tf.run_config change)."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.rules.tf.tf_edits import tf_record, tf_row
from ms_fmk_transplt.engine.spans.span_context import SpanContext

RUN_CONFIG_CHECKPOINTS = declare(
    "tf.run_config_checkpoints",
    "a RunConfig whose checkpoints may be off (`save_checkpoints_steps=1000 if rank == 0 else "
    "None`): one caveat row, NPURunConfig would save every 100 steps there",
    "`tf.estimator.RunConfig` saves no checkpoint when `save_checkpoints_steps` and "
    "`save_checkpoints_secs` are both None (one None and the other not given counts as both); "
    "the adapter's `NPURunConfig` turns that into a checkpoint every 100 steps "
    "(tf_adapter/python/npu_bridge/estimator/npu/npu_config.py). Where both are None as "
    "written, tf.run_config keeps the checkpoints off: it appends "
    "`.replace(save_checkpoints_steps=None, save_checkpoints_secs=None)` to the NPURunConfig "
    "call (RunConfig.replace sets them after NPURunConfig's constructor, which NPUEstimator "
    "itself calls on its config, and nothing is evaluated twice). Where one of them may be "
    "None (a conditional expression with a None arm: DeepLearningExamples' "
    "`save_checkpoints_steps=1000 if hvd.rank() == 0 else None`), the call is migrated as it "
    "is and this row says what to do: on the processes where it is None, NPURunConfig would "
    "make every rank write checkpoints into the same model_dir. A RunConfig that gives neither "
    "saves every 600 s on TensorFlow and every 100 steps on NPURunConfig: both save, so it is "
    "left as it is.",
    kind=OPEN_WORK,
)
_STEPS, _SECS = "save_checkpoints_steps", "save_checkpoints_secs"
_KEEP_OFF = f".replace({_STEPS}=None, {_SECS}=None)"


def checkpoint_settings(ctx: SpanContext, node: ast.Call, params: Sequence[str], rule: str) -> None:
    """A ``tf.estimator.RunConfig(...)`` call becoming NPURunConfig (``params``: RunConfig's
    parameters in order): checkpoints that are off as written stay off (a change of ``rule``),
    and a setting that may be None is a caveat row."""
    if any(kw.arg is None for kw in node.keywords):
        return  # (**kwargs: what it holds is not known)
    given: dict[str, ast.expr] = {kw.arg: kw.value for kw in node.keywords if kw.arg}
    for index, arg in enumerate(node.args[: len(params)]):
        given.setdefault(params[index], arg)
    kinds = {name: _kind(given.get(name)) for name in (_STEPS, _SECS)}
    if set(kinds.values()) <= {"missing", "none"} and "none" in kinds.values():
        before = ctx.snippet(node)
        end = ctx.source.span(node)[1]
        ctx.replace(end, end, _KEEP_OFF, checked=True)
        tf_record(
            ctx,
            node,
            rule,
            f"checkpoints stay off: {_KEEP_OFF} added (NPURunConfig saves every 100 steps "
            "when both are None)",
            before,
            ctx.snippet(node),
        )
    elif "maybe" in kinds.values() and "value" not in kinds.values():
        name = _STEPS if kinds[_STEPS] == "maybe" else _SECS
        value = given[name]
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
