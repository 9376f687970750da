"""Span pass, TensorFlow sessions onto the NPU: every ``ConfigProto(...)`` goes through the
adapter's ``npu_config_proto`` (which adds the ``NpuOptimizer`` custom optimizer and keeps the
other settings), a session created without a config gets one; GPU-only settings
(``gpu_options``, memory growth, visible devices, XLA JIT) are reported, never silently kept
(rules tf.session_config and tf.gpu_setting, declared here)."""

from __future__ import annotations

import ast
from collections.abc import Callable

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.rules.tf.adapter_options import option_set
from ms_fmk_transplt.engine.rules.tf.gpu_probes import config_reset, probe_tip
from ms_fmk_transplt.engine.rules.tf.tf_edits import (
    CATEGORY,
    add_keywords,
    literal,
    short,
    tf_qname,
    tf_record,
    tf_row,
    wrap,
)
from ms_fmk_transplt.engine.rules.tf.tf_files import tf_facts, tf_of
from ms_fmk_transplt.engine.spans.call_args import source_args
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext, StringPart
from ms_fmk_transplt.tables.tf_migration_table import Setting
from ms_fmk_transplt.tables.unsupported_table import Entry

SESSION_CONFIG = declare(
    "tf.session_config",
    "`ConfigProto(...)` -> `npu_config_proto(config_proto=ConfigProto(...))`; a session without "
    "a config gets `config=npu_config_proto()`",
    "A TF 1.x graph runs on the NPU when its session's config carries the adapter's "
    "`NpuOptimizer` custom graph optimizer. `npu_config_proto` (from `npu_bridge.npu_init`) adds "
    "it to the ConfigProto it is given, keeping every other setting (it also turns grappler's "
    "remapping and XLA JIT off and allows soft placement, as the adapter requires). Every "
    "`ConfigProto(...)` call is wrapped; `Session`, `InteractiveSession`, "
    "`MonitoredTrainingSession` and `SingularMonitoredSession` created without a config get "
    "`config=npu_config_proto()`; a config given as an expression not built by a ConfigProto call "
    "of the file is wrapped where it is passed. Wrapping twice is harmless (the optimizer is "
    "added once); a config already made by `npu_config_proto` is not wrapped again, and a file "
    "that adds the `NpuOptimizer` custom optimizer itself (the adapter's documented way, "
    '`custom_op.name = "NpuOptimizer"`) is left alone. With `--npu-option`, a ConfigProto the '
    "file assigns to a name gets the options a session reads (the table's session options but "
    "`iterations_per_loop`, which needs `util.set_iteration_per_loop` in the training loop) on "
    "the lines after it, on the NpuOptimizer's `parameter_map` (`.s = tf.compat.as_bytes(...)`, "
    "`.b`, `.i`); not one passed as a RunConfig's `session_config=` (NPURunConfig takes them).",
)
GPU_SETTING = declare(
    "tf.gpu_setting",
    "a GPU-only TensorFlow setting (gpu_options, memory growth, visible devices, XLA JIT): one row",
    "Settings that only mean something to a GPU are left as written and listed: `gpu_options` "
    "(allow_growth, memory fraction, visible_device_list), `tf.config.experimental."
    "set_memory_growth`, `set_visible_devices`, virtual/logical device configurations, XLA JIT "
    "(`global_jit_level`, `set_jit`, `jit_compile=True`, `jit_scope`), GPU probes "
    "(`tf.test.is_gpu_available`) and GPU device scopes. Harmless ones are caveats (they do "
    "nothing on the NPU), the others manual, each with what to use instead. A setting given "
    "as the value of another (`gpu_options=tf.GPUOptions(...)`) is one row, the value's.",
    kind=OPEN_WORK,
)


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


class TfSessionSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        self.table = self.tables.tf_migration
        self.wrapper = self.table.text("config_proto_wrapper")
        self.strings = {k: Setting(v[0], v[1]) for k, v in self.table.raw["gpu_strings"].items()}

    def leave_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        if tf_of(ctx) is None:
            return
        name = tf_qname(ctx, node.func)
        if tf_facts(ctx).configures_npu:
            pass  # the file adds the NpuOptimizer itself: its session configs are left alone
        elif name in self.table.config_proto:
            self._wrap_config(node)
        elif name in self.table.sessions:
            self._session(node, name, self.table.sessions[name])
        setting = self.table.gpu_settings.get(name)
        if setting is not None and self._applies(node, setting):
            probed = probe_tip(ctx, node) if name.endswith(".list_physical_devices") else None
            if probed is not None:  # a branch on it or a division by its length
                setting = Setting(probed[0], probed[1])
            self._row(node, short(name), setting)
        reset = config_reset(ctx, node)
        if reset is not None:  # the NpuOptimizer npu_config_proto() added is wiped
            tf_row(ctx, node, GPU_SETTING, reset[0], "manual", reset[1])
        for kw in node.keywords:
            kw_setting = self.table.gpu_keywords.get(kw.arg or "")
            if kw_setting is None or not self._keyword_applies(kw, kw_setting):
                continue
            value = kw.value
            if isinstance(value, ast.Call) and tf_qname(ctx, value.func) in self.table.gpu_settings:
                continue  # gpu_options=tf.GPUOptions(...): one row, the call's
            self._row(kw, f"{kw.arg}=", kw_setting)

    def leave_SimpleString(self, part: StringPart) -> None:
        """``"CUDA_VISIBLE_DEVICES"`` in a TensorFlow file (its PyTorch rules do not run there)."""
        if tf_of(self.ctx) is None or part.docstring or not isinstance(part.value, str):
            return
        setting = self.strings.get(part.value)
        if setting is not None:
            entry = Entry(part.value, CATEGORY, setting.action, setting.tip)
            message = f"{part.value}: {setting.tip}"
            self.ctx.unsupported(part.lines, part.value, entry, message, GPU_SETTING)

    def leave_Attribute(self, node: ast.Attribute) -> None:
        if tf_of(self.ctx) is None:
            return
        setting = self.table.gpu_attributes.get(node.attr)
        if setting is None or isinstance(node.ctx, ast.Del):
            return
        parent = self.ctx.parent(node)
        if isinstance(parent, ast.Attribute) and parent.attr in self.table.gpu_attributes:
            return  # one row for config.gpu_options.x.y (its outer setting)
        self._row(node, self.ctx.snippet(node, updated=False), setting)

    def _applies(self, node: ast.Call, setting: Setting) -> bool:
        if not setting.argument:
            return True
        text = " ".join(
            str(a.value.value)
            for a in source_args(node)
            if isinstance(a.value, ast.Constant) and isinstance(a.value.value, str)
        )
        return str(setting.argument).lower() in text.lower()

    @staticmethod
    def _keyword_applies(kw: ast.keyword, setting: Setting) -> bool:
        if isinstance(setting.argument, bool):
            return isinstance(kw.value, ast.Constant) and kw.value.value is setting.argument
        return True

    def _row(self, node: ast.AST, api: str, setting: Setting) -> None:
        tf_row(self.ctx, node, GPU_SETTING, api, setting.action, setting.tip)

    def _wrap_config(self, node: ast.Call) -> None:
        ctx = self.ctx
        parent = ctx.parent(node)
        if isinstance(parent, ast.keyword):
            parent = ctx.parent(parent)
        if isinstance(parent, ast.Call) and ctx.last_name(parent.func) == self.wrapper:
            return  # already npu_config_proto(config_proto=ConfigProto())
        before = ctx.snippet(node)
        wrap(ctx, node, self.wrapper, "config_proto")
        tf_record(
            ctx,
            node,
            SESSION_CONFIG,
            f"ConfigProto through {self.wrapper}()",
            before,
            ctx.snippet(node),
        )
        if isinstance(parent, ast.Assign):
            self._session_options(parent, node)

    def _session_options(self, stmt: ast.Assign, node: ast.Call) -> None:
        """The --npu-option values a session takes, on the NpuOptimizer of a config the file
        assigns to a name (``config = npu_config_proto(config_proto=ConfigProto())``): one line
        each after the assignment, as the adapter documents them
        (``parameter_map["precision_mode"].s = tf.compat.as_bytes("...")``, ``.b``, ``.i``).
        A config with no name (``Session(config=npu_config_proto())``) has no line to take them;
        one passed as a RunConfig's ``session_config=`` gets them from NPURunConfig (NPUEstimator
        writes its options into the session config's NpuOptimizer)."""
        ctx = self.ctx
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
        as_bytes = self._as_bytes()
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
            lines.append(
                (f'{custom}.parameter_map["{name}"].{field} = {shown}', option_set([name]))
            )
        anchor = (stmt.end_lineno or 0) + 1
        newline = source.newline
        text = "".join(indent.decode() + code + newline for code, _ in lines)
        ctx.replace(source.starts[anchor - 1], source.starts[anchor - 1], text, checked=True)
        for code, message in lines:
            ctx.record_insert(anchor, SESSION_CONFIG, message, code)

    def _as_bytes(self) -> Callable[[object], str]:
        """How a string value is written: ``tf.compat.as_bytes("...")`` through the file's name
        of TensorFlow, else ``"...".encode()``."""
        alias = next(
            (n for n, path in self.ctx.import_bound.items() if path in _TF_MODULES and n),
            None,
        )
        if alias is None:
            return lambda value: f"{literal(value)}.encode()"
        return lambda value: f"{alias}.compat.as_bytes({literal(value)})"

    def _session(self, node: ast.Call, name: str, position: int) -> None:
        ctx = self.ctx
        args = source_args(node)
        config = next((a for a in args if a.keyword == "config"), None)
        if config is None and len(node.args) > position:
            config_value: ast.expr | None = node.args[position]
        else:
            config_value = config.value if config is not None else None
        before = ctx.snippet(node)
        short = name.rsplit(".", 1)[1]
        if config_value is None:
            if any(a.star for a in args):
                return  # *args / **kwargs may hold the config
            add_keywords(ctx, node, [("config", f"{self.wrapper}()")], literal_values=False)
            message = f"{short}: config={self.wrapper}() added"
        elif self._built_here(config_value):
            return
        else:
            wrap(ctx, config_value, self.wrapper, "config_proto")
            message = f"{short}: its config through {self.wrapper}()"
        tf_record(ctx, node, SESSION_CONFIG, message, before, ctx.snippet(node))

    def _built_here(self, value: ast.expr) -> bool:
        """Whether the config is a ConfigProto call (wrapped by its own rule), already wrapped,
        or a name the file binds only to a ConfigProto call."""
        ctx = self.ctx
        if isinstance(value, ast.Call):
            if ctx.last_name(value.func) == self.wrapper:
                return True
            return tf_qname(ctx, value.func) in self.table.config_proto
        if isinstance(value, ast.Name) and tf_of(ctx) is not None:
            return value.id in tf_facts(ctx).config_names
        return False
