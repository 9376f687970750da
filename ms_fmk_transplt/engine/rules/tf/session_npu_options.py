"""``--npu-option`` on a session: the options a session reads, written on the NpuOptimizer of a
config the file assigns to a name, after the assignment (part of rule tf.session_config, which
session_spans.py declares and which calls ``write_session_options``)."""

from __future__ import annotations

import ast
from collections.abc import Callable

from ms_fmk_transplt.engine.rules.tf.adapter_options import option_set
from ms_fmk_transplt.engine.rules.tf.tf_edits import literal
from ms_fmk_transplt.engine.rules.tf.tf_files import tf_facts
from ms_fmk_transplt.engine.spans.span_context import SpanContext

_TF_MODULES = ("tensorflow", "tensorflow.compat.v1")
_NPU_OPTIMIZER = "npu_optimizer"  # (the adapter's own name for it in npu_config_proto)
# a session runs iterations_per_loop steps per run only with npu_bridge's
# util.set_iteration_per_loop(sess, train_op, n) in its training loop: not set there
SESSION_LOOP = frozenset({"iterations_per_loop"})
_FIELD = {"bool": "b", "int": "i", "str": "s", "path": "s"}  # how npu_attrs.cc reads each kind


def session_options(ctx: SpanContext) -> list[tuple[str, object, str]]:
    """The --npu-option values a session config takes (the table's ``session`` options), with
    the parameter_map field each is read from."""
    table = ctx.tables.tf_adapter.options
    return [
        (name, value, _FIELD[table[name].kind])
        for name, value in ctx.options.npu_options
        if name in table
        and "session" in table[name].places
        and table[name].kind in _FIELD
        and name not in SESSION_LOOP
    ]


def write_session_options(ctx: SpanContext, stmt: ast.Assign, node: ast.Call, rule: str) -> None:
    """The --npu-option values a session takes, on the NpuOptimizer of a config the file
    assigns to a name (``config = npu_config_proto(config_proto=ConfigProto())``): one line
    each after the assignment, as the adapter documents them
    (``parameter_map["precision_mode"].s = tf.compat.as_bytes("...")``, ``.b``, ``.i``).
    A config with no name (``Session(config=npu_config_proto())``) has no line to take them;
    one passed as a RunConfig's ``session_config=`` gets them from NPURunConfig (NPUEstimator
    writes its options into the session config's NpuOptimizer)."""
    options = session_options(ctx)
    target = stmt.targets[0] if len(stmt.targets) == 1 else None
    if not options or stmt.value is not node or not isinstance(target, ast.Name):
        return
    if target.id in tf_facts(ctx).run_config_sessions:
        return  # (a RunConfig's session_config: NPURunConfig takes the options)
    source = ctx.source
    start = source.starts[stmt.lineno - 1]
    indent = source.data[start : source.offset(stmt.lineno, stmt.col_offset)]
    tail = source.data[source.offset(stmt.end_lineno or 0, stmt.end_col_offset or 0) :]
    tail = tail[: max(tail.find(b"\n"), 0)].strip()
    if indent.strip(b" \t") or (tail and not tail.startswith(b"#")):
        return  # (not alone on its lines: `if x: config = ...`, `config = ...; y = 1`)
    if (stmt.end_lineno or 0) >= len(source.starts):
        return  # (the file's last line, without a line break after it)
    as_bytes = _as_bytes(ctx)
    custom = _NPU_OPTIMIZER
    lines = [
        (
            f"{custom} = [o for o in {target.id}.graph_options.rewrite_options."
            'custom_optimizers if o.name == "NpuOptimizer"][0]',
            "the NpuOptimizer of the session config, for --npu-option",
        )
    ]
    for name, value, field in options:
        shown = as_bytes(value) if field == "s" else literal(value)
        lines.append((f'{custom}.parameter_map["{name}"].{field} = {shown}', option_set([name])))
    anchor = (stmt.end_lineno or 0) + 1
    newline = source.newline
    text = "".join(indent.decode() + code + newline for code, _ in lines)
    ctx.replace(source.starts[anchor - 1], source.starts[anchor - 1], text, checked=True)
    for code, message in lines:
        ctx.record_insert(anchor, rule, message, code)


def _as_bytes(ctx: SpanContext) -> Callable[[object], str]:
    """How a string value is written: ``tf.compat.as_bytes("...")`` through the file's name
    of TensorFlow, else ``"...".encode()``."""
    alias = next(
        (n for n, path in ctx.import_bound.items() if path in _TF_MODULES and n),
        None,
    )
    if alias is None:
        return lambda value: f"{literal(value)}.encode()"
    return lambda value: f"{alias}.compat.as_bytes({literal(value)})"
