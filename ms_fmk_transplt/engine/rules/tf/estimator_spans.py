"""Span pass, TensorFlow Estimators onto the adapter's: ``tf.estimator.RunConfig`` ->
``NPURunConfig`` (positional arguments named, arguments it does not take reported, the
``--npu-option`` values added), ``Estimator`` -> ``NPUEstimator``, ``EstimatorSpec`` ->
``NPUEstimatorSpec``, a canned Estimator's config through ``npu_run_config_init``, checkpoints
kept off (run_config_checkpoints.py) (rules tf.run_config, tf.run_config_argument, tf.estimator,
tf.canned_estimator, declared here)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.rules.tf.adapter_options import option_set
from ms_fmk_transplt.engine.rules.tf.run_config_checkpoints import DEFAULT_SECS, checkpoint_settings
from ms_fmk_transplt.engine.rules.tf.tf_edits import (
    TfNameReads,
    add_keywords,
    literal,
    short,
    tf_qname,
    tf_record,
    tf_row,
    wrap,
)
from ms_fmk_transplt.engine.rules.tf.tf_files import tf_of
from ms_fmk_transplt.engine.spans.call_args import source_args
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.events import ChangeEvent

RUN_CONFIG = declare(
    "tf.run_config",
    "`tf.estimator.RunConfig(...)` -> `NPURunConfig(...)` (the adapter's RunConfig)",
    "An Estimator runs on the NPU when its RunConfig is the adapter's `NPURunConfig`: it adds the "
    "NPU session configuration and takes the NPU options (iterations_per_loop, precision_mode, "
    "dump and profiling configs, ...). The call keeps its arguments; positional ones are given "
    "their names (NPURunConfig's first parameter is iterations_per_loop, not model_dir); options "
    "given with `--npu-option NAME=VALUE` are added as keywords. An Estimator created without a "
    "config gets `config=NPURunConfig().replace(save_checkpoints_steps=None, "
    "save_checkpoints_secs=600)` (NPUEstimator refuses none; the default RunConfig saves every "
    "600 s). A RunConfig gets the checkpoint settings RunConfig would have set appended as "
    "`.replace(save_checkpoints_steps=..., save_checkpoints_secs=...)` where NPURunConfig "
    "would save every 100 steps instead: both None as written (`=None, =None`), neither given "
    "(`=None, =600`), or one that may be None (the same expression again, when it can be "
    "evaluated twice; tf.run_config_checkpoints says why and when). "
    "`from npu_bridge.npu_init import *` provides the name (tf.adapter_import).",
)
RUN_CONFIG_ARGUMENT = declare(
    "tf.run_config_argument",
    "a RunConfig argument NPURunConfig does not take: one row naming it",
    "NPURunConfig takes most of RunConfig's arguments, not all (`device_fn`, `protocol`, "
    "`experimental_max_worker_delay_secs`, `session_creation_timeout_secs`, "
    "`checkpoint_save_graph_def`): the call is migrated, the argument stays as written and is "
    "listed, and must be removed before the script runs (NPURunConfig would raise TypeError).",
    kind=OPEN_WORK,
)
ESTIMATOR = declare(
    "tf.estimator",
    "`tf.estimator.Estimator` -> `NPUEstimator`, `EstimatorSpec` -> `NPUEstimatorSpec`",
    "The adapter's Estimator builds its graph for the NPU (iterations per loop, NPU hooks) and "
    "expects its EstimatorSpec from the model_fn. Every reference is renamed: calls, subclass "
    "bases, isinstance tests. Both names come from `from npu_bridge.npu_init import *`.",
)
CANNED_ESTIMATOR = declare(
    "tf.canned_estimator",
    "a canned Estimator (DNNClassifier, LinearRegressor, ...) gets "
    "`config=npu_run_config_init(...)`",
    "The adapter has no NPU version of the canned Estimators; "
    "`npu_run_config_init(run_config=...)` gives their RunConfig the NPU session configuration "
    "(a new one when the call passes none), which is how the adapter runs them on the NPU.",
    caveat="a canned Estimator gets the NPU session configuration only: NPURunConfig's NPU options "
    "(iterations_per_loop, precision_mode, ...) cannot be set on it",
)


class TfEstimatorSpans(TfNameReads):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        self.table = self.tables.tf_migration
        self.run_config_params = self.tables.tf_adapter.constructors["RunConfig"]
        self.npu_params = frozenset(self.tables.tf_adapter.constructors["NPURunConfig"])

    def name_read(self, node: ast.Attribute | ast.Name) -> None:
        if tf_of(self.ctx) is None or self.ctx.is_claimed(node):
            return
        name = tf_qname(self.ctx, node)
        new = self.table.renames.get(name)
        if new is None:
            return
        before = self.ctx.snippet(node)
        start, end = self.ctx.source.span(node)
        self.ctx.replace(start, end, new)
        self.ctx.claim(node)
        rule = RUN_CONFIG if new == "NPURunConfig" else ESTIMATOR
        tf_record(self.ctx, node, rule, f"{short(name)} -> {new}", before, new)

    def leave_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        if tf_of(ctx) is None:
            return
        name = tf_qname(ctx, node.func)
        if name == "tensorflow.estimator.RunConfig":
            self._run_config(node)
        elif name == "tensorflow.estimator.Estimator":
            self._estimator_config(node)
        elif name.startswith("tensorflow.estimator.") and name.rsplit(".", 1)[1] in (
            self.table.canned
        ):
            self._canned(node, name)

    def _run_config(self, node: ast.Call) -> None:
        ctx = self.ctx
        before = ctx.snippet(node)
        named = []
        for index, arg in enumerate(node.args):
            if isinstance(arg, ast.Starred) or index >= len(self.run_config_params):
                tf_row(
                    ctx,
                    node,
                    RUN_CONFIG_ARGUMENT,
                    "RunConfig(*args)",
                    "manual",
                    "name the arguments: NPURunConfig's parameters are in another order",
                )
                return
            start = ctx.source.span(arg)[0]
            ctx.replace(start, start, f"{self.run_config_params[index]}=", checked=True)
            named.append(self.run_config_params[index])
        for kw in node.keywords:
            if kw.arg is not None and kw.arg not in self.npu_params:
                tf_row(
                    ctx,
                    kw,
                    RUN_CONFIG_ARGUMENT,
                    f"RunConfig({kw.arg}=...)",
                    "manual",
                    f"NPURunConfig has no parameter {kw.arg}: remove the argument (it would "
                    "raise TypeError)",
                    f"NPURunConfig does not take {kw.arg}=: left as written",
                )
        given = {kw.arg for kw in node.keywords} | set(named)
        options = [(k, v) for k, v in ctx.options.npu_options if k in self.npu_params]
        added = add_keywords(ctx, node, [(k, v) for k, v in options if k not in given])
        if named or added:
            what = ", ".join([*(f"{n}= named" for n in named), *(f"{k}= added" for k in added)])
            tf_record(
                ctx, node, RUN_CONFIG, f"NPURunConfig arguments: {what}", before, ctx.snippet(node)
            )
        checkpoint_settings(ctx, node, self.run_config_params, RUN_CONFIG)

    def _estimator_config(self, node: ast.Call) -> None:
        """NPUEstimator refuses a missing config: one without it gets ``config=NPURunConfig()``
        (the default RunConfig, the adapter's)."""
        ctx = self.ctx
        args = source_args(node)
        position = int(self.table.raw["estimator_config_position"])
        if any(a.keyword == "config" or a.star for a in args) or len(node.args) > position:
            return
        before = ctx.snippet(node)
        options = [(k, v) for k, v in ctx.options.npu_options if k in self.npu_params]
        value = f"NPURunConfig({', '.join(f'{k}={literal(v)}' for k, v in options)})"
        value += DEFAULT_SECS  # (the Estimator's default RunConfig saves every 600 s)
        add_keywords(ctx, node, [("config", value)], literal_values=False)
        tf_record(
            ctx,
            node,
            RUN_CONFIG,
            f"NPUEstimator needs a config: config=NPURunConfig(){DEFAULT_SECS} added"
            + (f"; {option_set(k for k, _ in options)}" if options else ""),
            before,
            ctx.snippet(node),
        )

    def _canned(self, node: ast.Call, name: str) -> None:
        ctx = self.ctx
        before = ctx.snippet(node)
        wrapper = self.table.text("run_config_init")
        config = next((a for a in source_args(node) if a.keyword == "config"), None)
        if config is None:
            if any(a.star == "**" for a in source_args(node)):
                return
            add_keywords(ctx, node, [("config", f"{wrapper}()")], literal_values=False)
        else:
            if isinstance(config.value, ast.Call) and ctx.last_name(config.value.func) == wrapper:
                return
            wrap(ctx, config.value, wrapper, "run_config")
        tf_record(
            ctx,
            node,
            CANNED_ESTIMATOR,
            f"{name.rsplit('.', 1)[1]}: config through {wrapper}()",
            before,
            ctx.snippet(node),
        )


# how the changes that set an option say so: "--npu-option NAME set" (npu_device, a session's
# NpuOptimizer, an NPURunConfig added to an Estimator) and "NAME= added" (an NPURunConfig's
# keywords, tf.run_config)
_SET = re.compile(r"--npu-option ([\w, ]+) set")
_ADDED = re.compile(r"(\w+)= added")


def applied_npu_options(events: Iterable[ChangeEvent]) -> set[str]:
    """The --npu-option names the changes of a run set somewhere (in any config)."""
    found: set[str] = set()
    for event in events:
        if not event.rule.startswith("tf."):
            continue
        for match in _SET.finditer(event.message):
            found.update(n.strip() for n in match.group(1).split(","))
        if event.rule == RUN_CONFIG:
            found.update(_ADDED.findall(event.message))
    return found
