"""Span pass, TF 1.x ``tf.data`` batches for the NPU's static shapes: ``drop_remainder=True``
added to a training pipeline's ``batch`` / ``padded_batch`` / ``map_and_batch``, an evaluation or
inference pipeline left alone, one the code does not tell listed (rules tf.drop_remainder,
tf.partial_batch, declared here; tf_pipelines.py reads what a pipeline is for)."""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.rules.tf.tf_edits import add_keywords, raw_qname, tf_record, tf_row
from ms_fmk_transplt.engine.rules.tf.tf_files import tf_of
from ms_fmk_transplt.engine.rules.tf.tf_pipelines import (
    TRAIN,
    context_role,
    file_roles,
    repeats_before,
)
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.tables.tf_migration_table import TfMigrationTable

DROP_REMAINDER = declare(
    "tf.drop_remainder",
    "`dataset.batch(n)` -> `dataset.batch(n, drop_remainder=True)` on a TF 1.x training pipeline",
    "The adapter compiles the graph for static shapes: a last, smaller batch would change the "
    "input shape and recompile (or fail with iterations_per_loop > 1); on an evaluation or "
    "inference pipeline, though, dropping it loses examples (a decode of fewer sentences than "
    "a batch outputs nothing). So a `batch`, `padded_batch` or `map_and_batch` call of a TF "
    "1.x file that does not pass `drop_remainder` is placed by what the code around it says, "
    "nearest first, the first sign deciding:\n\n"
    "1. the `if` that holds it: `if is_training:` / `if mode == tf.estimator.ModeKeys.TRAIN:` "
    "train, their `else` (and the code after such an `if` that returns) evaluates; `if not "
    "is_training:` / `if mode != ModeKeys.TRAIN:` the other way round;\n"
    "2. the function or class that holds it: its name (`train_input_fn`, `synth_train_fn` "
    "train; `eval_fn`, `get_infer_iterator`, `predict_input_fn`, `DatasetBuilderTest` "
    "evaluate), or how the file uses the function: `estimator.train(input_fn=f)`, "
    "`tf.estimator.TrainSpec(f)`, `f(is_training=True)` train; `estimator.evaluate/predict("
    "input_fn=f)`, `EvalSpec(f)`, `f(is_training=False)` evaluate;\n"
    "3. nothing above tells, but the dataset is repeated without end before it is batched "
    "(`ds = ds.repeat()` earlier in the function, no `if` between): no batch is ever partial, "
    "so it is treated as training.\n\n"
    "Training gets `drop_remainder=True` (the row says which sign decided); evaluation, "
    "validation, test, prediction, inference and export are left alone; a pipeline nothing "
    "tells (a builder shared by both, its use a parameter) is left alone with a "
    "tf.partial_batch row. A call that passes `drop_remainder` (any expression) is left "
    "alone.",
    caveat="the last partial batch of each epoch is dropped",
)
PARTIAL_BATCH = declare(
    "tf.partial_batch",
    "a TF 1.x batch the code does not tell is training or evaluation: left alone, one caveat row",
    "A `batch` / `padded_batch` / `map_and_batch` call without `drop_remainder` that tf."
    "drop_remainder cannot place (a builder shared by training and evaluation, whose use "
    "comes from a parameter: `def input_fn(is_training)` with the batch outside its `if`) is "
    "left as written and listed: the NPU's static shapes want `drop_remainder=True` on the "
    "training pipeline, and evaluation and inference must keep their last partial batch "
    "(dropping it loses examples and changes the metrics). Pass `drop_remainder=is_training` "
    "(or the flag that says training) there.",
    kind=OPEN_WORK,
)
_MAP_AND_BATCH = (
    "tensorflow.data.experimental.map_and_batch",
    "tensorflow.contrib.data.map_and_batch",
)


class Batches:
    """The batch calls of one file (the file's input_fn roles are read once per tree)."""

    def __init__(self, ctx: SpanContext, table: TfMigrationTable) -> None:
        self.ctx = ctx
        self.table = table
        self._roles: dict[str, str] | None = None  # (the whole file's: all its pieces)

    def is_batch(self, name: str, func: ast.Attribute) -> bool:
        return func.attr in ("batch", "padded_batch") or name in _MAP_AND_BATCH

    def batch(self, node: ast.Call, func: ast.Attribute) -> None:
        ctx = self.ctx
        if any(kw.arg in (None, "drop_remainder") for kw in node.keywords):
            return
        if any(isinstance(a, ast.Starred) for a in node.args):
            return
        name = _root(func)
        root = raw_qname(ctx, name) if name is not None else None
        if func.attr != "map_and_batch" and root and root.split(".")[0] in self.table.import_roots:
            # tf.train.batch / tf.compat.v1.train.batch: other signatures; a dataset is a value
            # (``tf.data.Dataset.range(9).batch(2)``: a call's result, whose root is no name)
            return
        positional = 2 if func.attr == "batch" else 4  # where drop_remainder is by position
        if len(node.args) >= positional:
            return  # drop_remainder given by position
        why = self._training(node, func)
        if why is None:
            return
        before = ctx.snippet(node)
        if not why:
            tf_row(
                ctx,
                node,
                PARTIAL_BATCH,
                f".{func.attr}",
                "caveat",
                "the NPU compiles static shapes: pass drop_remainder=True if this pipeline "
                "trains (a smaller last batch recompiles the graph, or fails with "
                "iterations_per_loop > 1); keep the last batch if it evaluates or predicts "
                "(dropping it loses examples and changes the results)",
                f".{func.attr}(...): the code does not tell whether this pipeline trains or "
                "evaluates: drop_remainder left as written",
            )
            return
        add_keywords(ctx, node, [("drop_remainder", True)])
        tf_record(
            ctx,
            node,
            DROP_REMAINDER,
            f".{func.attr}(..., drop_remainder=True): {why}",
            before,
            ctx.snippet(node),
        )

    def _training(self, node: ast.Call, func: ast.Attribute) -> str | None:
        """Why the call feeds training ("" when nothing tells; None: it evaluates or predicts,
        leave it alone)."""
        ctx = self.ctx
        unit = ctx.unit
        if unit is None:
            return ""
        found = context_role(unit.ancestors, unit.node, self._file_roles())
        if found is not None:
            role, what = found
            return f"a training pipeline ({what})" if role == TRAIN else None
        dataset: ast.expr | None = func.value
        if func.attr == "map_and_batch":  # ds.apply(map_and_batch(...))
            parent = ctx.parent(node)
            apply = parent if isinstance(parent, ast.Call) else None
            func_of_apply = apply.func if apply is not None else None
            dataset = func_of_apply.value if isinstance(func_of_apply, ast.Attribute) else None
        if dataset is not None and repeats_before(dataset, unit.ancestors, unit.node):
            return "the dataset repeats without end before it is batched"
        return ""

    def _file_roles(self) -> dict[str, str]:
        if self._roles is None:
            tf = tf_of(self.ctx)
            self._roles = file_roles(tf.function_uses) if tf is not None else {}
        return self._roles


def _root(func: ast.expr) -> ast.Name | None:
    while isinstance(func, ast.Attribute):
        func = func.value
    return func if isinstance(func, ast.Name) else None
