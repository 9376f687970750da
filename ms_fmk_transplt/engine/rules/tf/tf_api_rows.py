"""Span pass, TensorFlow APIs the adapter does not support (its support lists for TF 1.15 and
TF 2.6, rules/tf_adapter.json ``api_support``) and custom GPU kernel libraries: one row each
(rules tf.unsupported_api and tf.custom_kernel, declared here)."""

from __future__ import annotations

import ast
import dataclasses

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.rules.family_spec import Folding
from ms_fmk_transplt.engine.rules.libraries.library_rows import fold_rows_per_file
from ms_fmk_transplt.engine.rules.tf.gpu_only_apis import CUDNN_RNN, NCCL, TENSORRT
from ms_fmk_transplt.engine.rules.tf.session_spans import GPU_SETTING
from ms_fmk_transplt.engine.rules.tf.tf_distributed_spans import DISTRIBUTED_API
from ms_fmk_transplt.engine.rules.tf.tf_edits import TfNameReads, raw_qname, short, tf_qname, tf_row
from ms_fmk_transplt.engine.rules.tf.tf_files import tf_facts, tf_of
from ms_fmk_transplt.engine.rules.tf.tpu_estimator import runs_without_tpu
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.events import Notice
from ms_fmk_transplt.tables.tf_migration_table import tf_name

UNSUPPORTED_API = declare(
    "tf.unsupported_api",
    "a TensorFlow API the Ascend TF adapter does not support: one row",
    "The adapter publishes which TensorFlow APIs it supports, per TensorFlow version (1.15 for "
    "TF 1.x code, 2.6 for TF 2.x code); an API it lists as unsupported (no migration path: "
    "`tf.contrib` parts, TPU and GPU-specific APIs, ...) is left as written and listed with the "
    "list's note. The files of TF 1.x programs are looked up in the 1.15 list, those of TF 2.x "
    "programs in the 2.6 list, their `tf.compat.v1` code included (it runs on TF 2.x, and the "
    "2.6 list names the compat.v1 APIs it lacks), but for the Estimator API (`tf.estimator`: "
    "ModeKeys, hooks, specs, exports), which the 2.6 list marks for npu_device's eager path: "
    "code migrated through `npu_device.compat.v1` runs it (that package is the TF 1.x adapter, "
    "npu_bridge, ported to TF 2.x, whose NPUEstimator subclasses tf.estimator.Estimator; "
    "`compat_v1_support` in rules/tf_migration.json); a notebook by the version the program model "
    "gives it (its pin, else its names), a file checked alone by its own code.",
    kind=OPEN_WORK,
)
CUSTOM_KERNEL = declare(
    "tf.custom_kernel",
    "a custom op library (`tf.load_op_library`): CUDA kernels the NPU cannot run, one row",
    "A `.so` of custom TensorFlow kernels is built for the GPU (CUDA); on the NPU its operators "
    "must be ported to Ascend C custom operators, or replaced by built-in ones.",
    kind=OPEN_WORK,
)


# rules whose rows are folded into one per file and API (engine/migrate.py): a TF 2.x file
# reading hvd.rank() sixteen times, a Keras model subclassing a listed layer in every class
TF_FOLDED_PER_API = frozenset(
    {UNSUPPORTED_API, CUSTOM_KERNEL, DISTRIBUTED_API, GPU_SETTING, NCCL, CUDNN_RNN, TENSORRT}
)


class TfApiRows(TfNameReads):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        self.kernels = self.tables.tf_migration.custom_kernels
        support = self.tables.tf_adapter.api_support
        self.lists = {"tf1": support.get("1.15", {}), "tf2": support.get("2.6", {})}
        table = self.tables.tf_migration
        self.tpu: dict[str, str] = table.raw["tpu_apis"]
        self.handled = frozenset(
            [
                *table.gpu_settings,
                *table.renames,
                *table.strategies,
                *table.custom_kernels,
                *table.raw["support_list_exceptions"],
            ]
        )
        # 2.6 list entries the compat.v1 path (npu_bridge on TF 2.x) runs, by name prefix
        self.compat_v1: tuple[str, ...] = tuple(table.raw["compat_v1_support"])

    def name_read(self, node: ast.Attribute | ast.Name) -> None:
        ctx = self.ctx
        if tf_of(ctx) is None:
            return
        if self._tpu(node):
            return
        listed = self.lists[tf_facts(ctx).version]
        raw = raw_qname(ctx, node)
        entry = self._entry(listed, raw)
        if entry is None or entry[0] != "unsupported":
            return  # (TensorFlow's own deprecations are not the NPU's work)
        name = tf_name(raw)
        if name in self.handled:
            return  # a GPU setting (tf.gpu_setting), a migrated API, a listed exception
        if tf_facts(ctx).style == "tf2_compat" and name.startswith(self.compat_v1):
            return  # (npu_device.compat.v1 runs it: the Estimator API, compat_v1_support)
        parent = ctx.parent(node)
        if isinstance(parent, ast.Attribute) and self._entry(listed, raw_qname(ctx, parent)):
            return  # the longer name gets the row
        tip = entry[1]
        shown = short(name)
        tf_row(ctx, node, UNSUPPORTED_API, shown, "manual", tip)

    def _tpu(self, node: ast.Attribute | ast.Name) -> bool:
        """A TPU API (the TPU Estimator stack): a row with the NPU way, whatever the support
        lists say (they miss ``tf.contrib.tpu``)."""
        ctx = self.ctx
        name = tf_qname(ctx, node)
        prefix = next((p for p in self.tpu if p.endswith(".") and name.startswith(p)), "")
        tip = self.tpu.get(name) or self.tpu.get(prefix)
        if tip is None:
            return False
        style = tf_facts(ctx).style
        if style == "tf2_compat" and name.endswith(".TPUEstimator"):
            tip = self.tables.tf_migration.text("tpu_estimator_tf2")  # (tf.tpu_estimator: TF 1)
        elif name not in self.tpu and style == "tf2":  # not the NPUEstimator path
            tip = self.tables.tf_migration.raw["tf2_tips"][short(prefix)]
        if runs_without_tpu(ctx, node, name):
            return True  # (tf.tpu_estimator migrates the TPUEstimator: this runs as written)
        parent = ctx.parent(node)
        if isinstance(parent, ast.Attribute) and tf_qname(ctx, parent).startswith(name + "."):
            return True  # the longer name gets the row
        tf_row(ctx, node, UNSUPPORTED_API, short(name), "manual", tip)
        return True

    @staticmethod
    def _entry(listed: dict[str, tuple[str, str]], raw: str | None) -> tuple[str, str] | None:
        """The list's entry for a name, as written (the 2.6 list names tf.compat.v1 APIs) or
        without compat.v1."""
        if not raw or not raw.startswith("tensorflow"):
            return None
        return listed.get(raw) or listed.get(tf_name(raw))

    def leave_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        if tf_of(ctx) is None:
            return
        name = tf_qname(ctx, node.func)
        tip = self.kernels.get(name)
        if tip is not None:
            tf_row(ctx, node, CUSTOM_KERNEL, short(name), "manual", tip)


def fold(notices: list[Notice], done: Folding) -> list[Notice]:
    """The family's rows folded (Family.fold): one row per file and API of TF_FOLDED_PER_API,
    manual when one of its uses is (a GPU list looped over, a caveat, and tested in a branch)."""
    manual = {
        (n.file, n.rule, n.api)
        for n in notices
        if n.open_work and n.rule in TF_FOLDED_PER_API and n.action == "manual"
    }
    folded = fold_rows_per_file(notices, TF_FOLDED_PER_API, done.migrated, by_api=True)
    return [
        dataclasses.replace(n, action="manual")
        if n.open_work and n.action != "manual" and (n.file, n.rule, n.api) in manual
        else n
        for n in folded
    ]
