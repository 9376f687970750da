"""What a GPU probe's value does where the code uses it (issue 45 N7): ``list_physical_devices
('GPU')`` is empty on an NPU machine, so a loop over it does nothing there, but a branch on it
takes its no-GPU arm (efficientdet's ``get_precision()`` turns mixed precision off) and a
division by its length raises ZeroDivisionError; and ``tf.distribute.OneDeviceStrategy`` on a
GPU or CPU device in TF 2.x code, which puts the model on the host CPU under npu_device (rule
tf.distributed_api's rows, tf.gpu_setting's tips)."""

from __future__ import annotations

import ast

from ms_fmk_transplt.engine.rules.tf.tf_distributed_spans import DISTRIBUTED_API
from ms_fmk_transplt.engine.rules.tf.tf_edits import tf_qname, tf_row
from ms_fmk_transplt.engine.rules.tf.tf_files import tf_of
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext

_DIVISIONS = (ast.Div, ast.FloorDiv, ast.Mod)
_TESTED = (ast.If, ast.While, ast.IfExp, ast.Assert)
BRANCH = (
    "a GPU device list is empty on an NPU machine: the test on it ({lines}) is false there, "
    "so the NPU run takes the no-GPU branch (a float32 or CPU-only path, a GPU feature left "
    "off); make that branch test for the NPU, or drop the GPU test"
)
DIVISOR = (
    "a GPU device list is empty on an NPU machine: its length is 0 there and the division by "
    "it ({lines}) raises ZeroDivisionError; divide by the number of NPUs (RANK_SIZE) instead"
)
ONE_DEVICE = (
    "OneDeviceStrategy({device}): under npu_device the strategy's scope places the model's "
    "variables and ops on {where}, not on the NPU npu_device.open().as_default() opened; drop "
    "the strategy (run without a strategy scope, or use tf.distribute.get_strategy()'s default) "
    "so the model is built on the NPU"
)


RESET = (
    "{call} replaces the whole {field} of the session config, and with it the NpuOptimizer "
    "custom optimizer npu_config_proto() put there (tf_adapter npu_bridge/npu_init.py): a "
    "session given this config runs without the NPU optimizer unless the config goes through "
    "npu_config_proto() again; use MergeFrom (it keeps the custom optimizers), or pass the "
    "finished config through npu_config_proto(config_proto=config) (it adds the NpuOptimizer "
    "only when it is missing)"
)
_RESETS = ("CopyFrom", "ParseFromString", "Clear")
_FIELDS = ("rewrite_options", "graph_options")


def config_reset(ctx: SpanContext, node: ast.Call) -> tuple[str, str] | None:
    """The tip of ``config.graph_options.rewrite_options.CopyFrom(...)`` (or of graph_options,
    or ParseFromString / Clear) in TF 1.x code whose session configs the migration gives the
    NpuOptimizer, as (the row's API, its tip); None for any other call."""
    tf, func = tf_of(ctx), node.func
    if tf is None or not tf.tf1 or tf.configures_npu or not isinstance(func, ast.Attribute):
        return None
    field = func.value
    if func.attr not in _RESETS or not isinstance(field, ast.Attribute):
        return None
    if field.attr not in _FIELDS:
        return None
    api = f"{field.attr}.{func.attr}"
    return api, RESET.format(call=api + "()", field=field.attr)


def probe_tip(ctx: SpanContext, node: ast.AST) -> tuple[str, str] | None:
    """(action, tip) of a GPU device list used as a branch's test or a divisor (``None``: used
    otherwise, a loop over it does nothing on the NPU, the table's caveat stands)."""
    if not isinstance(node, ast.Call):
        return None
    leaves = {name.rsplit(".", 1)[-1] for name in ctx.tables.tf_migration.gpu_settings}
    branches, divisions = _uses(ctx, node, leaves | {"get_memory_growth"})
    parts = []
    if divisions:
        parts.append(DIVISOR.format(lines=_where(divisions)))
    if branches:
        parts.append(BRANCH.format(lines=_where(branches)))
    return ("manual", "; ".join(parts)) if parts else None


def _uses(ctx: SpanContext, call: ast.Call, settings: set[str]) -> tuple[list[str], list[str]]:
    """The code of the tests the probe's value is in and of the divisions by it: the call
    itself, or the name a plain assignment binds it to, read in the same scope. An ``if``
    whose only arm makes GPU settings (``set_visible_devices``: ``settings``, their last names)
    does nothing on the NPU either: no branch."""
    branches: list[str] = []
    divisions: list[str] = []
    chain: list[ast.AST] = [call]
    while not isinstance(chain[-1], ast.stmt):
        parent = ctx.parent(chain[-1])
        if parent is None:
            break
        chain.append(parent)
    _classify(chain, branches, divisions, settings)
    parent = chain[1] if len(chain) > 1 else None
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
        target = parent.targets[0]
        if isinstance(target, ast.Name):
            scope = ctx.scope_of(call).node
            for read, path in _reads(scope, target.id):
                if read.lineno > parent.lineno:
                    _classify([read, *path], branches, divisions, settings)
    return list(dict.fromkeys(branches)), list(dict.fromkeys(divisions))


def _classify(
    chain: list[ast.AST], branches: list[str], divisions: list[str], settings: set[str]
) -> None:
    """``chain``: a use of the value, then its parents nearest first."""
    for child, parent in zip(chain, chain[1:]):
        if isinstance(parent, ast.stmt) and not isinstance(parent, (ast.If, ast.While, ast.Assert)):
            return
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name):
            if parent.func.id == "len" and child in parent.args:
                continue
            return
        if isinstance(parent, ast.BinOp) and isinstance(parent.op, _DIVISIONS):
            if child is parent.right:
                divisions.append(_code(parent))
            return
        if isinstance(parent, _TESTED):
            if child is parent.test and not _settings_only(parent, settings):
                branches.append(_code(parent.test))
            return
        if not isinstance(parent, (ast.UnaryOp, ast.BoolOp, ast.Compare)):
            return


def _settings_only(test: ast.AST, settings: set[str]) -> bool:
    """An ``if`` without ``else`` whose body only makes GPU settings (loops over them, asserts
    of them, a device of the list picked for them)."""
    if not isinstance(test, ast.If) or test.orelse:
        return False
    return all(_setting(stmt, settings) for stmt in test.body)


def _setting(stmt: ast.stmt, settings: set[str]) -> bool:
    if isinstance(stmt, ast.For) and not stmt.orelse:
        return all(_setting(s, settings) for s in stmt.body)
    if isinstance(stmt, ast.Assign):  # visible = gpus[local_rank]: a device of the list
        return isinstance(stmt.value, ast.Subscript) and isinstance(stmt.value.value, ast.Name)
    value = stmt.value if isinstance(stmt, ast.Expr) else getattr(stmt, "test", None)
    if not isinstance(stmt, (ast.Expr, ast.Assert)) or not isinstance(value, ast.Call):
        return False
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in settings


def _reads(scope: ast.AST, name: str) -> list[tuple[ast.Name, list[ast.AST]]]:
    """Each load of ``name`` in the scope's own code (not in nested functions), with its
    parents nearest first, up to the scope."""
    found: list[tuple[ast.Name, list[ast.AST]]] = []
    todo: list[tuple[ast.AST, list[ast.AST]]] = [(scope, [])]
    while todo:
        node, path = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Name) and child.id == name:
                if isinstance(child.ctx, ast.Load):
                    found.append((child, [node, *path]))
                continue
            todo.append((child, [node, *path]))
    return found


def _where(uses: list[str]) -> str:
    return ", ".join(f"`{use}`" for use in uses)


def _code(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


class TfGpuProbes(SpanConcern):
    """``tf.distribute.OneDeviceStrategy("/gpu:0")`` / ``("/cpu:0")`` in TF 2.x code: a row."""

    def leave_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        tf = tf_of(ctx)
        if tf is None or tf.style != "tf2":
            return
        if tf_qname(ctx, node.func) != "tensorflow.distribute.OneDeviceStrategy":
            return
        given = [k.value for k in node.keywords if k.arg == "device"]
        device = node.args[0] if node.args else given[0] if given else None
        if not isinstance(device, ast.Constant) or not isinstance(device.value, str):
            return  # a device the code computes: the NPU's own name may be among its values
        kind = device.value.lower()
        where = "the GPU, absent on an NPU machine: soft placement puts them on the host CPU"
        if "cpu" in kind:
            where = "the host CPU"
        elif "gpu" not in kind:
            return
        tip = ONE_DEVICE.format(device=repr(device.value), where=where)
        tf_row(ctx, node, DISTRIBUTED_API, "tf.distribute.OneDeviceStrategy", "manual", tip)
