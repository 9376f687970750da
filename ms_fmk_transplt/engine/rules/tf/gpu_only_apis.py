"""Span pass, TensorFlow APIs built on NVIDIA-only libraries, which the NPU cannot run and which
nothing else reports (``rules/tf_migration.json#gpu_only_apis``): NCCL collectives, cuDNN RNNs,
TF-TRT, ``tf.contrib.distribute`` strategies the adapter has no rewrite for: one row each, with
the adapter's replacement; TF 1.x loss scaling of ``tf.contrib.mixed_precision`` onto the
adapter's ``NPULossScaleOptimizer`` and loss scale managers (``#loss_scale_tf1``), a rename
(rules tf.nccl, tf.cudnn_rnn, tf.tensorrt, tf.npu_loss_scale, declared here; the contrib
strategies' rows are tf.distributed_api's)."""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.rules.tf.tf_distributed_spans import DISTRIBUTED_API
from ms_fmk_transplt.engine.rules.tf.tf_edits import (
    TfNameReads,
    rename_callee,
    short,
    tf_qname,
    tf_row,
)
from ms_fmk_transplt.engine.rules.tf.tf_files import tf_of
from ms_fmk_transplt.engine.spans.span_context import SpanContext

_ADAPTER = "https://github.com/Ascend/tensorflow at commit 085a7b2e"

NCCL = declare(
    "tf.nccl",
    "an NCCL collective (`tf.contrib.nccl`, `nccl_ops`, `tf.raw_ops.Nccl*`, "
    "`tf.distribute.NcclAllReduce`): NVIDIA GPUs only, one row naming HCCL's",
    "NCCL is NVIDIA's collective library: its ops have GPU kernels only, so a graph that "
    "holds them cannot run on an NPU machine. The NPU's collective "
    "library is HCCL: the adapter's `hccl_ops.allreduce(tensor, reduction)` "
    f"(`tf_adapter/python/npu_bridge/hccl/hccl_ops.py`, exported by `npu_bridge.npu_init`; "
    "`tf_adapter_2.x/python/npu_device/distribute/hccl.py`'s `all_reduce` for TF 2.x) or its "
    f"optimizer wrappers, one process per NPU ({_ADAPTER}). Each NCCL call, and a "
    "`NcclAllReduce` / `AllReduceCrossDeviceOps` used outside a strategy call, is listed; one "
    "passed to a `tf.distribute` strategy call is not (tf.distribute_strategy replaces the "
    "strategy and drops its arguments in TF 1.x code, tf.distributed_api lists it in TF 2.x).",
    kind=OPEN_WORK,
)
CUDNN_RNN = declare(
    "tf.cudnn_rnn",
    "a cuDNN RNN layer (`tf.contrib.cudnn_rnn.CudnnLSTM/GRU`, Keras `CuDNNLSTM/CuDNNGRU`): "
    "NVIDIA GPUs only, one row",
    "These layers call cuDNN's fused RNN kernels, which exist for NVIDIA GPUs only. TF 1.x "
    "layers: the adapter's fused NPU RNNs are `DynamicRNN(hidden_size, dtype, "
    'cell_type="LSTM")` and `DynamicGRUV2(hidden_size, dtype)` '
    "(`tf_adapter/python/npu_bridge/estimator/npu/npu_dynamic_rnn.py`, time-major by default "
    "like the cuDNN layers; their weights are their own), or TensorFlow's "
    "`CudnnCompatibleLSTMCell` / `CudnnCompatibleGRUCell`, which read the cuDNN layer's "
    "checkpoint. Keras layers: `LSTM` / `GRU` in their cuDNN-compatible configuration "
    '(`recurrent_activation="sigmoid"`, and `reset_after=True` for GRU) load the same weights. '
    "The choice changes the model's variables, so the code is left as written.",
    kind=OPEN_WORK,
)
TENSORRT = declare(
    "tf.tensorrt",
    "a TF-TRT conversion (`TrtGraphConverter(V2)`, `tf.experimental.tensorrt.Converter`, "
    "`create_inference_graph`): NVIDIA GPUs only, one row",
    "TF-TRT rewrites a graph into TensorRT engines, which run on NVIDIA GPUs only; neither the "
    "NPU nor the adapter has a counterpart (the adapter compiles the graph for the NPU itself "
    f"when the session runs it, {_ADAPTER}). Remove the conversion from the training code, or, "
    "for offline inference, freeze the graph and convert it with CANN's ATC tool.",
    kind=OPEN_WORK,
)
NPU_LOSS_SCALE = declare(
    "tf.npu_loss_scale",
    "`tf.contrib.mixed_precision.LossScaleOptimizer` -> `NPULossScaleOptimizer`, its loss "
    "scale managers -> the adapter's (TF 1.x)",
    "On the NPU a float overflow is read from the device's float status, not from inf/nan "
    "checks of the gradients. The adapter's `NPULossScaleOptimizer(opt, loss_scale_manager, "
    "is_distributed=False)` (`tf_adapter/python/npu_bridge/estimator/npu/"
    "npu_loss_scale_optimizer.py`) subclasses `tf.contrib.mixed_precision.LossScaleOptimizer` "
    "with the same first two arguments and checks overflow that way; its "
    "`FixedLossScaleManager` and `ExponentialUpdateLossScaleManager` "
    "(`npu_loss_scale_manager.py`) subclass contrib's with the same arguments. All three are "
    f"exported by `npu_bridge.npu_init` ({_ADAPTER}); the adapter's own porting tool "
    "(`convert_tf2npu/ast_impl.py`) makes the same kind of rename for "
    "`tf.train.experimental.MixedPrecisionLossScaleOptimizer` and its loss scales (that one "
    "takes a loss scale, not a manager: tf.gpu_setting lists it with the manager to use).",
    caveat="with several NPUs pass is_distributed=True, so that an overflow on one NPU skips "
    "the step on all of them; mixed precision itself is the adapter's precision_mode "
    '(NPURunConfig(precision_mode="allow_mix_precision"))',
)
_RULES = {"nccl": NCCL, "cudnn_rnn": CUDNN_RNN, "tensorrt": TENSORRT}


class TfGpuOnlyApis(TfNameReads):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        table = self.tables.tf_migration
        self.rows: dict[str, tuple[str, str]] = {}  # name -> (rule, tip)
        for kind, entries in table.raw["gpu_only_apis"].items():
            rule = _RULES.get(kind, DISTRIBUTED_API if kind == "distributed_api" else "")
            if not rule:
                raise ValueError(f"rules/tf_migration.json: gpu_only_apis: unknown class {kind}")
            self.rows.update((name, (rule, tip)) for name, tip in entries.items())
        self.renames: dict[str, str] = table.raw["loss_scale_tf1"]
        self.strategies = table.strategies

    def name_read(self, node: ast.Attribute | ast.Name) -> None:
        ctx = self.ctx
        if tf_of(ctx) is None:
            return
        name = tf_qname(ctx, node)
        found = self.rows.get(name)
        if found is None:
            return
        rule, tip = found
        if rule == NCCL and self._in_strategy(node):
            return  # the strategy's own rule covers its arguments
        # a private module's path (tensorflow.python...) as the code spells it
        api = ctx.snippet(node, updated=False) if ".python." in name else short(name)
        tf_row(ctx, node, rule, api, "manual", tip)

    def _in_strategy(self, node: ast.AST) -> bool:
        """Whether the node is inside the arguments of a ``tf.distribute`` strategy call."""
        ctx = self.ctx
        parent = ctx.parent(node)
        while parent is not None and not isinstance(parent, ast.stmt):
            if isinstance(parent, ast.Call) and tf_qname(ctx, parent.func) in self.strategies:
                return True
            parent = ctx.parent(parent)
        return False

    def leave_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        if tf_of(ctx) is None:
            return
        name = tf_qname(ctx, node.func)
        new = self.renames.get(name)
        if new is not None:
            rename_callee(ctx, node, new, NPU_LOSS_SCALE, f"{short(name)} -> {new}")
