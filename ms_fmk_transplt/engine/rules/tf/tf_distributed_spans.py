"""Span pass, TensorFlow distribution onto the adapter's collective communication: Horovod's
``hvd.init/rank/size/local_rank/local_size``, ``DistributedOptimizer`` and
``BroadcastGlobalVariablesHook`` -> the adapter's (``init_resource`` runs initialize_system,
which collective communication needs first), its other APIs reported; ``tf.distribute``
strategies -> ``npu_strategy.NPUStrategy`` in TF 1.x code, reported in TF 2.x; TF 1.x datasets'
batch calls through tf_batches.py (rules tf.horovod, tf.distributed_api, tf.distribute_strategy,
tf.horovod_import, declared here)."""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.rules.tf.horovod_shutdown import pair_shutdown
from ms_fmk_transplt.engine.rules.tf.tf_batches import Batches
from ms_fmk_transplt.engine.rules.tf.tf_edits import (
    append_argument,
    rename_callee,
    short,
    tf_qname,
    tf_record,
    tf_row,
)
from ms_fmk_transplt.engine.rules.tf.tf_files import tf_facts, tf_of
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext

HOROVOD = declare(
    "tf.horovod",
    "Horovod -> the adapter's HCCL APIs: `hvd.rank()` -> `get_npu_rank_id()`, "
    "`hvd.DistributedOptimizer` -> `NPUDistributedOptimizer`, ...",
    "Horovod does not drive NPUs; the adapter gives the same facts and wrappers over HCCL: "
    "`hvd.init()` (a statement) -> `(npu_sess, npu_shutdown) = init_resource()` (it runs "
    "initialize_system in a session of its own, which collective communication needs before "
    "any rank is read), `hvd.rank/size/local_rank/local_size()` -> `get_npu_rank_id()` / "
    "`get_npu_rank_size()` / `get_npu_local_rank_id()` / `get_npu_local_rank_size()`, "
    "`hvd.DistributedOptimizer(opt)` -> `NPUDistributedOptimizer(opt)` (Keras: "
    "`npu_keras_optimizer(opt)`), `hvd.BroadcastGlobalVariablesHook(0)` -> "
    "`NPUBroadcastGlobalVariablesHook(0, get_npu_rank_id())`. Launch one process per NPU with "
    "the rank table the adapter reads (RANK_TABLE_FILE, RANK_ID, RANK_SIZE) instead of horovodrun.",
    caveat="init_resource() opens a session for initialize_system: where no "
    "tf.horovod_shutdown row closes it, run shutdown_resource(npu_sess, npu_shutdown) and "
    "close_session(npu_sess) when training ends; Horovod's extra "
    "arguments (compression, op, ...) are not taken by the adapter's wrappers",
)
DISTRIBUTED_API = declare(
    "tf.distributed_api",
    "a Horovod or tf.distribute API without a direct adapter counterpart: one row",
    "Horovod's collectives (`allreduce`, `broadcast`, ...), its callbacks, TF 2.x "
    "`tf.distribute` strategies and the `tf.contrib.distribute` strategies without an NPU "
    "counterpart (`OneDeviceStrategy`, `ParameterServerStrategy`: the adapter's ps mode takes "
    "`tf.distribute.experimental.ParameterServerStrategy` as `NPURunConfig(distribute=...)`, "
    "tf_adapter/python/npu_bridge/estimator/npu/npu_config.py) are left as written and listed "
    "with the adapter's way to do the same (npu_bridge.hccl's hccl_ops, npu_device.distribute).",
    kind=OPEN_WORK,
)
DISTRIBUTE_STRATEGY = declare(
    "tf.distribute_strategy",
    "`tf.distribute.MirroredStrategy()` -> `npu_strategy.NPUStrategy()` (TF 1.x Estimator code)",
    "In TF 1.x code (an Estimator's train_distribute) the adapter's strategy is "
    "`npu_strategy.NPUStrategy()`: one process per NPU, gradients all-reduced over HCCL. The "
    "strategy's arguments (devices, cross_device_ops) are GPU placement and are dropped. "
    "`tf.contrib.distribute`'s `MirroredStrategy` and `CollectiveAllReduceStrategy` are "
    "replaced the same way: `NPURunConfig` hands `train_distribute` to the Estimator unchanged "
    "(tf_adapter/python/npu_bridge/estimator/npu/npu_config.py), so a GPU strategy would reach "
    "it, and the adapter's porting tool (convert_tf2npu/ast_impl.py) replaces any "
    "`*.MirroredStrategy(...)` call by `npu_strategy.NPUStrategy()`.",
    caveat="NPUStrategy runs one process per NPU: launch the script once per device with the "
    "rank table (RANK_TABLE_FILE, RANK_ID, RANK_SIZE); the GPU strategy's arguments are dropped",
)
HOROVOD_IMPORT = declare(
    "tf.horovod_import",
    "a Horovod import left once every Horovod call of the file is migrated: one caveat row",
    "When tf.horovod migrated every Horovod call of a file, its `import horovod...` is left as "
    "written and listed: nothing needs it any more, and on an NPU machine without Horovod the "
    "import fails. Remove it there (a file that still calls Horovod has tf.distributed_api rows "
    "instead, and no row for its import).",
    kind=OPEN_WORK,
)


class TfDistributedSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        self.table = self.tables.tf_migration
        self.batches = Batches(ctx, self.table)

    def leave_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        tf = tf_of(ctx)
        if tf is None:
            return
        func = node.func
        root = _root(func)
        if root is not None and root.id in tf.horovod and ctx.qname(root) is not None:
            if isinstance(func, ast.Attribute) and not tf.tf1:
                self._horovod_tf2(node, func)
            elif isinstance(func, ast.Attribute) and func.value is root:
                self._horovod(node, func, tf.horovod[root.id])
            else:
                names = ctx.names_in(func)  # (last first: hvd.callbacks.X -> X, callbacks, hvd)
                manual = self.table.horovod_manual
                tip = manual.get(names[0]) or manual.get(names[-2] if len(names) > 2 else "")
                api = ".".join(reversed(names))
                tf_row(
                    ctx, node, DISTRIBUTED_API, api, "manual", tip or self.table.horovod_manual["*"]
                )
            return
        name = tf_qname(ctx, func)
        strategy = self.table.strategies.get(name)
        if strategy is not None:
            self._strategy(node, name, strategy)
        elif tf.tf1 and isinstance(func, ast.Attribute) and self.batches.is_batch(name, func):
            self.batches.batch(node, func)

    def _horovod(self, node: ast.Call, func: ast.Attribute, kind: str) -> None:
        """TF 1.x (leave_Call sends TF 2.x code to _horovod_tf2)."""
        ctx = self.ctx
        entry = self.table.horovod.get(func.attr)
        api = f"{func.value.id}.{func.attr}"  # type: ignore[attr-defined]
        if b"enable_eager_execution" in ctx.source.data:
            # eager TF 1.x: init_resource() builds a graph, and the get_npu_* facts need it
            tf_row(ctx, node, DISTRIBUTED_API, api, "manual", self.table.text("horovod_eager"))
            return
        if entry is None:
            tip = self.table.horovod_manual.get(func.attr, self.table.horovod_manual["*"])
            tf_row(ctx, node, DISTRIBUTED_API, api, "manual", tip)
            return
        before = ctx.snippet(node)
        if "statement" in entry:
            stmt = ctx.parent(node)
            if not isinstance(stmt, ast.Expr) or node.args or node.keywords:
                tf_row(ctx, node, DISTRIBUTED_API, api, "manual", entry["note"])
                return
            start, end = ctx.owned(node, stmt)
            ctx.replace(start, end, entry["statement"])
            where = pair_shutdown(ctx, tf_facts(ctx), stmt, HOROVOD)
            message = f"{api}() -> {entry['statement']}" + (f" ({where})" if where else "")
            tf_record(ctx, node, HOROVOD, message, before, entry["statement"])
            return
        call = entry.get("keras_call", entry["call"]) if kind == "keras" else entry["call"]
        if any(isinstance(a, ast.Starred) for a in node.args):
            tf_row(ctx, node, DISTRIBUTED_API, api, "manual", f"use {call} (its arguments by hand)")
            return
        if entry["call"] == "NPUDistributedOptimizer" and not self._optimizer_only(node, api, call):
            return
        if "append" in entry:  # by its keyword after keyword arguments (NPU...Hook(root_rank=0))
            keyword = f"{entry['append_keyword']}=" if node.keywords else ""
            append_argument(ctx, node, keyword + entry["append"])
        rename_callee(ctx, node, call, HOROVOD, f"{api} -> {call}", before=before)

    def _horovod_tf2(self, node: ast.Call, func: ast.Attribute) -> None:
        """TF 2.x: the adapter is npu_device, not npu_bridge: the optimizer wrapper is
        rewritten, the rest listed with npu_device's way."""
        ctx = self.ctx
        table: dict[str, object] = self.table.raw["horovod_tf2"]
        api = ".".join(reversed(ctx.names_in(func)))
        entry = table.get(func.attr)
        if isinstance(func.value, ast.Attribute):  # hvd.callbacks.X, hvd.elastic.run, ...
            entry = table.get(func.value.attr)
        if isinstance(entry, dict) and "advise" in entry:  # allreduce, broadcast_variables
            tip = _collective_tip(ctx, node, entry)
            tf_row(ctx, node, DISTRIBUTED_API, api, "manual", tip)
            return
        if not isinstance(entry, dict):
            tip = str(entry if entry is not None else table["*"])
            tf_row(ctx, node, DISTRIBUTED_API, api, "manual", tip)
            return
        call = str(entry["call"])
        if self._optimizer_only(node, api, call):
            rename_callee(ctx, node, call, HOROVOD, f"{api} -> {call}", adapter=False)

    def _optimizer_only(self, node: ast.Call, api: str, call: str) -> bool:
        """Whether Horovod's optimizer wrapper is given the optimizer alone (the adapter's
        wrappers take nothing else); a row otherwise."""
        if len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred):
            return True
        tip = (
            f"{call}(optimizer) takes the optimizer only: remove Horovod's other arguments, "
            "then use it"
        )
        tf_row(self.ctx, node, DISTRIBUTED_API, api, "manual", tip)
        return False

    def _strategy(self, node: ast.Call, name: str, strategy: str) -> None:
        ctx = self.ctx
        assert tf_of(ctx) is not None
        if not tf_facts(ctx).tf1:
            tf_row(
                ctx,
                node,
                DISTRIBUTED_API,
                short(name),
                "manual",
                self.table.text("strategy_tf2_tip"),
            )
            return
        before = ctx.snippet(node)
        start, end = ctx.owned(node)
        new = f"{self.table.text('strategy_module')}.{strategy}()"
        ctx.replace(start, end, new)
        tf_record(ctx, node, DISTRIBUTE_STRATEGY, f"{short(name)} -> {new}", before, new)


def horovod_import_rows(ctx: SpanContext) -> None:
    """Once the file is walked: when every Horovod call it makes was migrated, its Horovod
    import is a caveat row (nothing needs Horovod any more; on an NPU machine without it the
    import fails)."""
    tf = tf_of(ctx)
    if tf is None or not tf.horovod:
        return
    if not any(e.rule == HOROVOD for e in ctx.events):
        return
    if any(n.rule == DISTRIBUTED_API and n.api.split(".")[0] in tf.horovod for n in ctx.notices):
        return  # Horovod is still called
    tip = (
        "every Horovod call of this file was migrated: remove this import where "
        "Horovod is not installed (the NPU machine)"
    )
    if tf.passes_horovod:  # the name is still read: removing the import raises NameError
        uses = ", ".join(tf.passes_horovod[:3])
        if len(tf.passes_horovod) > 3:
            uses += f" and {len(tf.passes_horovod) - 3} more"
        tip = (
            "every Horovod call of this file was migrated, but Horovod is still used as a "
            f"value ({uses}): keep the import and install Horovod on the NPU machine, or pass "
            "None where the code only tests it"
        )
    for node in ctx.import_statements:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
        if any(n and n.split(".")[0] == "horovod" for n in names):
            tf_row(ctx, node, HOROVOD_IMPORT, "horovod", "caveat", tip)


_REDUCTIONS = {"Average": '"mean"', "Sum": '"sum"'}
_NO_COUNTERPART = ("compression", "name", "device_dense", "device_sparse", "process_set")


def _collective_tip(ctx: SpanContext, node: ast.Call, entry: dict[str, str]) -> str:
    """The tip of a TF 2.x Horovod collective with an npu_device counterpart
    (``hvd.allreduce`` -> ``all_reduce``, ``hvd.broadcast_variables`` -> ``broadcast``), its
    reduction or root rank read from the call's arguments."""
    args = {kw.arg: kw.value for kw in node.keywords if kw.arg}
    call = entry["advise"]
    if call.endswith("broadcast"):
        root = args.get("root_rank", node.args[1] if len(node.args) > 1 else None)
        shown = ctx.snippet(root) if root is not None and len(ctx.snippet(root)) < 40 else "..."
        return entry["tip"].format(call=call, root=shown)
    average = args.get("average", node.args[1] if len(node.args) > 1 else None)
    reduction, why = _reduction(ctx, args.get("op"), average)
    dropped = [f"{k}=" for k in sorted(args) if k in _NO_COUNTERPART]
    extra = f"; drop {', '.join(dropped)}: no counterpart" if dropped else ""
    return entry["tip"].format(call=call, reduction=reduction, why=why, extra=extra)


def _reduction(ctx: SpanContext, op: ast.expr | None, average: ast.expr | None) -> tuple[str, str]:
    """The all_reduce reduction of Horovod's ``op=`` / ``average=`` (Average when neither is
    given), and why."""
    if op is not None:
        name = (ctx.qname(op) or "").rsplit(".", 1)[-1]
        if name in _REDUCTIONS:
            return _REDUCTIONS[name], f"op={name}"
        if name == "Adasum":
            return '"mean"', "op=Adasum has no HCCL counterpart; mean is op=Average"
        return '"mean" for Average, "sum" for Sum', "op is not a constant here"
    if isinstance(average, ast.Constant) and average.value in (True, False):
        return ('"mean"', "average=True") if average.value else ('"sum"', "average=False")
    if average is not None and not (isinstance(average, ast.Constant) and average.value is None):
        return '"mean" when average is true, else "sum"', "average is not a constant here"
    return '"mean"', "Horovod's default op, Average"


def _root(func: ast.expr) -> ast.Name | None:
    while isinstance(func, ast.Attribute):
        func = func.value
    return func if isinstance(func, ast.Name) else None
