"""Span pass, a TPUEstimator program onto the NPU the way Huawei's convert_tf2npu does it: the
TPUEstimator is kept, told it has no TPU (``use_tpu=False``, ``eval_on_tpu=False``,
``export_to_tpu=False``) and given the NPU session configuration through the adapter's
``npu_run_config_init(run_config=...)`` (rule tf.tpu_estimator, declared here). Its TPU
configuration objects (the TPU RunConfig, TPUConfig, InputPipelineConfig) and the model_fn's
TPUEstimatorSpec then run as written, so the file gets no row for them (tf_api_rows.py asks
``runs_without_tpu``)."""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import declare
from ms_fmk_transplt.engine.options import kept_rule
from ms_fmk_transplt.engine.rules.tf.tf_edits import (
    add_keywords,
    short,
    tf_qname,
    tf_record,
    wrap,
)
from ms_fmk_transplt.engine.rules.tf.tf_files import tf_of
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext

TPU_ESTIMATOR = declare(
    "tf.tpu_estimator",
    "`TPUEstimator(..., use_tpu=...)` -> `TPUEstimator(..., use_tpu=False, eval_on_tpu=False, "
    "export_to_tpu=False)` with `config=npu_run_config_init(run_config=...)` (TF 1.x)",
    "A TPUEstimator told it has no TPU runs its model_fn as a plain Estimator: it still sets "
    "`params['batch_size']` from `train_batch_size` / `eval_batch_size` / "
    "`predict_batch_size`, turns the model_fn's TPUEstimatorSpec into an EstimatorSpec "
    "(calling `scaffold_fn`, running `host_call` on the host) and accepts its TPU RunConfig. "
    "Huawei's convert_tf2npu (convert_tf2npu/ast_impl.py) migrates it this way: `use_tpu`, "
    "`eval_on_tpu` and `export_to_tpu` set to False (added when not given: they default to "
    "True), the `config` passed through the adapter's `npu_run_config_init(run_config=...)` "
    "(tf_adapter/python/npu_bridge/npu_init.py: it puts the NPU session configuration into the "
    "RunConfig and keeps its class, which TPUEstimator requires). Rewriting it into "
    "NPUEstimator instead would move each batch size into the input_fns and rewrite every "
    "TPUEstimatorSpec (scaffold_fn, host_call), which is not a local change. The TPU RunConfig, "
    "TPUConfig, InputPipelineConfig and TPUEstimatorSpec of a file whose TPUEstimator is "
    "migrated get no row. A call passing `use_tpu` or a later argument by position, or "
    "`*args` / `**kwargs`, one with a `# msft:` comment, or every call when the rule is "
    "deselected, is left with its rows. The code the program guards with its own "
    "`use_tpu` flag (TPUClusterResolver, CrossShardOptimizer) keeps its rows: run it with that "
    "flag off. TF 2.x code's TPUEstimator (compat.v1, migrated through `npu_device.compat.v1`) "
    "is not rewritten: its row names NPUEstimator, whatever way its arguments are passed.",
    caveat="the TPUEstimator runs as a plain Estimator with the NPU session configuration: "
    "NPUEstimator's loop on the device (iterations_per_loop) and NPURunConfig's options are not "
    "used",
)
_OFF = ("use_tpu", "eval_on_tpu", "export_to_tpu")
_CONFIG_POSITION = 2  # TPUEstimator(model_fn, model_dir, config, params, use_tpu, ...)
_RUN_AS_WRITTEN = ("RunConfig", "TPUConfig", "InputPipelineConfig", "TPUEstimatorSpec")


def _is_tpu_estimator(ctx: SpanContext, call: ast.Call) -> bool:
    name = tf_qname(ctx, call.func)
    return name in ctx.tables.tf_migration.raw["tpu_apis"] and name.endswith(".TPUEstimator")


def _migratable(ctx: SpanContext, call: ast.Call) -> bool:
    """A TPUEstimator call of TF 1.x code whose TPU arguments are all by name."""
    tf = tf_of(ctx)
    if tf is None or tf.style != "tf1" or not _is_tpu_estimator(ctx, call):
        return False
    if any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > 4:
        return False
    if ctx.options is not None and not kept_rule(TPU_ESTIMATOR, ctx.options):
        return False  # (deselected: the TPU rows stay)
    first, last = ctx.source.span(call)
    if b"msft:" in ctx.source.data[first : ctx.source.line_end(ctx.source.line_of(last))]:
        return False  # (an opt-out comment on the call: left as written, with its rows)
    return all(kw.arg is not None for kw in call.keywords)


def runs_without_tpu(ctx: SpanContext, node: ast.AST, name: str) -> bool:
    """Whether the TPU API ``name`` (at ``node``) needs no row: the TPUEstimator call it names
    is migrated, or it is TPU configuration a migrated TPUEstimator of the file runs as
    written."""
    tf = tf_of(ctx)
    if tf is None:
        return False
    parent = ctx.parent(node)
    if isinstance(parent, ast.Call) and parent.func is node and name.endswith(".TPUEstimator"):
        return _migratable(ctx, parent)
    if not any(f".{api}" in name for api in _RUN_AS_WRITTEN):
        return False
    return any(_migratable(ctx, call) for call in tf.tpu_estimator_calls)


class TfTpuSpans(SpanConcern):
    def leave_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        if not _migratable(ctx, node):
            return
        before = ctx.snippet(node)
        given = {kw.arg: kw for kw in node.keywords}
        changed = []
        for name in _OFF:
            keyword = given.get(name)
            if keyword is None:
                continue
            if not (isinstance(keyword.value, ast.Constant) and keyword.value.value is False):
                start, end = ctx.owned(keyword.value, keyword)
                ctx.replace(start, end, "False")
                changed.append(f"{name}=False")
        added = [name for name in _OFF if name not in given]
        config = given["config"].value if "config" in given else None
        if config is None and len(node.args) > _CONFIG_POSITION:
            config = node.args[_CONFIG_POSITION]
        wrapper = ctx.tables.tf_migration.text("run_config_init")
        wrapped = isinstance(config, ast.Call) and ctx.last_name(config.func) == wrapper
        if config is not None and not wrapped:
            wrap(ctx, config, wrapper, "run_config")
            changed.append(f"config through {wrapper}()")
        if added:
            add_keywords(ctx, node, [(name, False) for name in added])
            changed += [f"{name}=False added" for name in added]
        if changed:
            message = f"{short(tf_qname(ctx, node.func))}: {', '.join(changed)}"
            tf_record(ctx, node, TPU_ESTIMATOR, message, before, ctx.snippet(node))
