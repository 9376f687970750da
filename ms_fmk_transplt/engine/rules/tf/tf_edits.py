"""Edits and records shared by the ``tf`` concerns: a change row that needs no ``import
torch_npu`` (it needs the adapter's import instead), an open-work row, keywords added to a
call."""

from __future__ import annotations

import ast
import json

from ms_fmk_transplt.engine.rules.tf.tf_files import tf_of
from ms_fmk_transplt.engine.scope_model import full_name
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.tables.tf_migration_table import tf_name
from ms_fmk_transplt.tables.unsupported_table import Entry

CATEGORY = "tensorflow"  # the category of the family's open-work rows


class TfNameReads(SpanConcern):
    """A concern that looks at every name the code reads: each ``Attribute`` (``tf.a.b`` and
    its part ``tf.a``) and each ``Name`` in a load, given to ``name_read``."""

    def leave_Attribute(self, node: ast.Attribute) -> None:
        self.name_read(node)

    def leave_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.name_read(node)

    def name_read(self, node: ast.Attribute | ast.Name) -> None:
        raise NotImplementedError


def tf_qname(ctx: SpanContext, node: ast.AST) -> str:
    """What a node names, TensorFlow's ``compat.v1`` taken out (tables/tf_migration_table.py's
    ``tf_name``)."""
    return tf_name(raw_qname(ctx, node))


def raw_qname(ctx: SpanContext, node: ast.AST) -> str | None:
    """What a node names, as resolved; in a notebook's cell, a name another cell imports
    (``tf`` of ``import tensorflow as tf``) is resolved through that import."""
    qualified = ctx.qname(node)
    tf = tf_of(ctx)
    if qualified is None and tf is not None and tf.notebook_imports:
        dotted = full_name(node)
        if dotted:
            root, _, rest = dotted.partition(".")
            path = tf.notebook_imports.get(root)
            if path is not None:
                qualified = f"{path}.{rest}" if rest else path
    return qualified


def short(name: str) -> str:
    """A TensorFlow name as code spells it: ``tf.estimator.RunConfig``."""
    return name.replace("tensorflow.", "tf.", 1) if name.startswith("tensorflow.") else name


def tf_record(
    ctx: SpanContext,
    node: ast.AST,
    rule: str,
    message: str,
    before: str,
    after: str,
    adapter: bool = True,
) -> None:
    """A change of the family; ``adapter``: it names something of ``npu_bridge.npu_init`` (the
    file then gets that import, tf.adapter_import), else of ``npu_device``."""
    tf = tf_of(ctx)
    if tf is not None:
        if adapter:
            tf.needs_adapter = True
        else:
            tf.needs_npu_device = True
    ctx.record(ctx.lines(node), rule, message, before, after, needs_torch_npu=False)


def tf_row(
    ctx: SpanContext,
    node: ast.AST,
    rule: str,
    api: str,
    action: str,
    tip: str,
    message: str | None = None,
) -> None:
    """An open-work row (manual or caveat) of the family; in a TF 2.x (npu_device) file, with
    the TF 2.x form of the tip where the table has one (``tf2_tips``: NPURunConfig and session
    options are the TF 1.x adapter's)."""
    tip = tf2_tip(ctx, api, tip)
    entry = Entry(api, CATEGORY, action, tip)
    ctx.unsupported(ctx.lines(node), api, entry, message or f"{api}: {tip}", rule)


def tf2_tip(ctx: SpanContext, api: str, tip: str) -> str:
    """The tip of ``api``, in its TF 2.x form in a TF 2.x (npu_device) file where the table has
    one (``tf2_tips``)."""
    tf = tf_of(ctx)
    if tf is not None and tf.style == "tf2":
        return str(ctx.tables.tf_migration.raw["tf2_tips"].get(api, tip))
    return tip


def literal(value: object) -> str:
    """Python source of an option value given on the command line (strings in double quotes,
    as most code writes them)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def rename_callee(
    ctx: SpanContext,
    node: ast.Call,
    new: str,
    rule: str,
    message: str,
    adapter: bool = True,
    before: str | None = None,
) -> None:
    """The called expression replaced by ``new`` (``tf.nn.dropout(...)`` ->
    ``npu_ops.dropout(...)``) and recorded; ``before``: the call's text before the concern's
    first edit of it (default: as it reads now)."""
    if before is None:
        before = ctx.snippet(node)
    start, end = ctx.source.span(node.func)
    ctx.replace(start, end, new)
    tf_record(ctx, node, rule, message, before, ctx.snippet(node), adapter)


def wrap(ctx: SpanContext, node: ast.expr, function: str, keyword: str) -> None:
    """``node`` passed to ``function`` (``npu_config_proto(config_proto=<node>)``)."""
    start, end = ctx.owned(node)
    ctx.replace(start, start, f"{function}({keyword}=", checked=True)
    ctx.replace(end, end, ")", checked=True)


def add_keywords(
    ctx: SpanContext, call: ast.Call, items: list[tuple[str, object]], literal_values: bool = True
) -> list[str]:
    """``name=value`` arguments added at the end of ``call`` (after a trailing comma if there
    is one); returns the names added. ``literal_values``: the values are Python values (shown
    with repr), else source text."""
    if not items:
        return []
    append_argument(
        ctx, call, ", ".join(f"{k}={literal(v) if literal_values else v}" for k, v in items)
    )
    return [k for k, _ in items]


def append_argument(ctx: SpanContext, call: ast.Call, text: str) -> None:
    """``text`` (arguments) added at the end of ``call``, after a trailing comma if there is
    one."""
    source = ctx.source
    end = source.span(call)[1] - 1  # the closing parenthesis
    if call.args or call.keywords:
        last = max((*call.args, *call.keywords), key=lambda a: source.span(a)[1])
        last_end = source.span(last)[1]
        between = source.data[last_end:end]
        if b"," in between.split(b"#")[0]:
            comma = last_end + between.index(b",") + 1
            ctx.replace(comma, comma, f" {text}", checked=True)
        else:
            ctx.replace(last_end, last_end, f", {text}", checked=True)
    else:
        ctx.replace(end, end, text, checked=True)
