"""Span pass, TensorFlow operators onto the adapter's faster NPU ones: ``tf.nn.dropout(x,
keep_prob)`` -> ``npu_ops.dropout`` in TF 1.x code, ``rate=r`` -> ``keep_prob=1 - r`` (not
gelu: the adapter's Gelu operator is the tanh approximation, ``tf.nn.gelu``'s default is the
exact form); Keras's ``LossScaleOptimizer``
-> ``npu_device.train.optimizer.NpuLossScaleOptimizer`` in TF 2.x code (rules tf.npu_ops and
tf.loss_scale, declared here)."""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import declare
from ms_fmk_transplt.engine.rules.tf.tf_api_rows import UNSUPPORTED_API
from ms_fmk_transplt.engine.rules.tf.tf_edits import (
    raw_qname,
    rename_callee,
    short,
    tf_qname,
    tf_row,
)
from ms_fmk_transplt.engine.rules.tf.tf_files import tf_facts, tf_of
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext

NPU_OPS = declare(
    "tf.npu_ops",
    "`tf.nn.dropout(x, keep_prob)` -> `npu_ops.dropout(x, keep_prob)`, `rate=r` -> "
    "`keep_prob=1 - r` (TF 1.x)",
    "The adapter documents its dropout as the faster NPU implementation (a fused mask operator "
    "instead of the random-uniform graph). gelu is not rewritten: the adapter's Gelu operator "
    "computes the tanh approximation, while `tf.nn.gelu` defaults to the exact form. Only the "
    "forms with the same meaning are "
    "rewritten: dropout given `keep_prob` (by name, or positionally to `tf.compat.v1.nn.dropout`, "
    "or to `tf.nn.dropout` in a file that calls TF 1.x-only APIs such as `tf.Session` or "
    "`tf.placeholder` and so runs TF 1.x; under TF 2.x `tf.nn.dropout`'s second parameter is "
    "`rate`, which is left alone), or given `rate=r` by name, which becomes `keep_prob=1 - r` "
    "(`r` parenthesized unless it is one operand; the adapter's `npu_ops.dropout(x, keep_prob, "
    "noise_shape, seed, name)`, tf_adapter/python/npu_bridge/estimator/npu_ops.py, takes no "
    "rate; Huawei's convert_tf2npu/ast_impl.py maps it the same way). Left as written: a call "
    "given a `noise_shape` (a broadcast mask; convert_tf2npu leaves these too), one given both "
    "`keep_prob` and `rate` "
    "(TensorFlow raises), and the layer forms `tf.layers.dropout` / Keras `Dropout`, whose "
    "`training` flag decides at run time whether they drop at all.",
    caveat="the NPU operator draws its own random mask: results match in distribution, not bit "
    "for bit",
)
LOSS_SCALE = declare(
    "tf.loss_scale",
    "`tf.keras.mixed_precision.LossScaleOptimizer` -> "
    "`npu_device.train.optimizer.NpuLossScaleOptimizer` (TF 2.x)",
    "On the NPU, overflow is detected by the device's status registers, not by inf/nan checks of "
    "the gradients; the adapter's NpuLossScaleOptimizer (the arguments of Keras's TF 2.4+ class) "
    'does that. The experimental class\'s `loss_scale` becomes them: `"dynamic"` -> '
    "`dynamic=True`, a number N -> `dynamic=False, initial_scale=N`; any other value (a LossScale "
    "object) is left as written, with a tf.unsupported_api row. A TF 1.15 file (npu_device is "
    "the TF 2.x adapter) is left as written with a tf.unsupported_api row naming npu_bridge's "
    "NPULossScaleOptimizer.",
    caveat="NpuLossScaleOptimizer checks overflow on the NPU; its dynamic loss scale may evolve "
    "differently from Keras's",
)

# TF 1.15's adapter (npu_bridge) has no npu_device; its loss scaling wraps a tf.train optimizer
_LOSS_SCALE_TF1 = (
    "TF 1.15: npu_device is the TF 2.x adapter; use npu_bridge's NPULossScaleOptimizer(opt, "
    "loss_scale_manager) on a tf.compat.v1.train optimizer (ExponentialUpdateLossScaleManager "
    "for a dynamic scale, FixedLossScaleManager for a fixed one)"
)


class TfNpuOpsSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        self.table = self.tables.tf_migration

    def leave_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        if tf_of(ctx) is None:
            return
        name = tf_qname(ctx, node.func)
        if tf_facts(ctx).tf1 and name in self.table.npu_ops:
            v1 = ".compat.v1." in (raw_qname(ctx, node.func) or "") or tf_facts(ctx).tf1_runtime
            self._npu_op(node, name, self.table.npu_ops[name], v1)
        elif name in self.table.loss_scale and tf_facts(ctx).style == "tf1":
            tf_row(ctx, node, UNSUPPORTED_API, short(name), "manual", _LOSS_SCALE_TF1)
        elif name in self.table.loss_scale:
            new = self.table.loss_scale[name]
            before = ctx.snippet(node)
            if name.endswith(".experimental.LossScaleOptimizer") and not self._v1_argument(node):
                return  # (its loss_scale is neither "dynamic" nor a number: a row says so)
            message = f"{short(name)} -> {new}"
            rename_callee(ctx, node, new, LOSS_SCALE, message, adapter=False, before=before)

    def _v1_argument(self, node: ast.Call) -> bool:
        """The experimental (TF 2.0-2.3) ``LossScaleOptimizer(opt, loss_scale)``: its
        ``loss_scale`` becomes the arguments NpuLossScaleOptimizer takes (those of the TF 2.4+
        class): ``"dynamic"`` -> ``dynamic=True``, a number N -> ``dynamic=False,
        initial_scale=N``. False (nothing changed, a row) for anything else: a LossScale object
        or a name has no literal counterpart."""
        ctx = self.ctx
        given = [kw.value for kw in node.keywords if kw.arg == "loss_scale"]
        argument = given[0] if given else (node.args[1] if len(node.args) > 1 else None)
        if argument is None:
            return True  # (its default is "dynamic": so is NpuLossScaleOptimizer's)
        owner = next((kw for kw in node.keywords if kw.value is argument), argument)
        value = argument.value if isinstance(argument, ast.Constant) else None
        if value == "dynamic":
            text = "dynamic=True"
        elif type(value) in (int, float) and not isinstance(value, bool):
            text = f"dynamic=False, initial_scale={ctx.snippet(argument)}"
        else:
            tip = (
                "the experimental LossScaleOptimizer's loss_scale argument has no literal "
                "counterpart: NpuLossScaleOptimizer(opt, dynamic=..., initial_scale=...) takes "
                "those of the TF 2.4+ class; convert it, then use npu_device.train.optimizer."
                "NpuLossScaleOptimizer"
            )
            tf_row(ctx, node, UNSUPPORTED_API, "LossScaleOptimizer(loss_scale=)", "manual", tip)
            return False
        start, end = ctx.source.span(owner)
        ctx.replace(start, end, text)
        return True

    def _npu_op(self, node: ast.Call, name: str, entry: dict[str, object], v1: bool) -> None:
        """``v1``: the call names ``tf.compat.v1``, or the file calls TF 1.x-only APIs through
        ``tensorflow`` itself (it runs TF 1.x): dropout's second parameter is keep_prob (under
        TF 2.x, ``tf.nn.dropout``'s is rate)."""
        ctx = self.ctx
        if any(isinstance(a, ast.Starred) for a in node.args):
            return
        keywords = {kw.arg: kw for kw in node.keywords}
        if None in keywords:
            return
        before = ctx.snippet(node)
        if "keep_prob" in entry:
            if "noise_shape" in keywords or len(node.args) > 2:
                return  # (a broadcast noise shape: convert_tf2npu leaves these too)
            rate = keywords.get("rate")
            if rate is not None:
                if "keep_prob" in keywords or len(node.args) > 1:
                    return  # (both given: TensorFlow raises)
                start, end = ctx.source.span(rate)
                ctx.replace(start, end, f"keep_prob={_one_minus(ctx.snippet(rate.value), rate)}")
            elif "keep_prob" not in keywords and (len(node.args) < 2 or not v1):
                return
        new = str(entry["call"])
        rename_callee(ctx, node, new, NPU_OPS, f"{short(name)} -> {new}", before=before)


def _one_minus(text: str, rate: ast.keyword) -> str:
    """``1 - rate``, the rate parenthesized unless it is one operand (a name, an attribute, a
    call, a subscript, a non-negative number)."""
    atomic = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)
    return f"1 - {text}" if isinstance(rate.value, atomic) else f"1 - ({text})"
