"""Span pass, TensorFlow sessions onto the NPU: every ``ConfigProto(...)`` goes through the
adapter's ``npu_config_proto`` (which adds the ``NpuOptimizer`` custom optimizer and keeps the
other settings), a session created without a config gets one; GPU-only settings
(``gpu_options``, memory growth, visible devices, XLA JIT) are reported, never silently kept
(rules tf.session_config and tf.gpu_setting, declared here)."""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.rules.tf.gpu_probes import config_reset, probe_tip
from ms_fmk_transplt.engine.rules.tf.session_npu_options import write_session_options
from ms_fmk_transplt.engine.rules.tf.tf_edits import (
    CATEGORY,
    add_keywords,
    short,
    tf2_tip,
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
    "of the file is wrapped where it is passed. The same holds for `session.Session` of "
    "`tensorflow.python.client`, `ChiefSessionCreator` / `WorkerSessionCreator` (`config`), "
    "slim's `learning.train` (`session_config`), and `managed_session()` / "
    "`prepare_or_wait_for_session()` of a `tf.train.Supervisor` the file binds to a name (as "
    "the adapter's porting tool, convert_tf2npu/ast_impl.py, does); a `MonitoredSession()` "
    "without a session creator gets `session_creator=ChiefSessionCreator(config="
    "npu_config_proto())`, the creator it makes by default with the config added. Wrapping "
    "twice is harmless (the optimizer is "
    "added once); a config already made by `npu_config_proto` is not wrapped again, and a file "
    "that adds the `NpuOptimizer` custom optimizer itself (the adapter's documented way, "
    '`custom_op.name = "NpuOptimizer"`) is left alone. With `--npu-option`, a ConfigProto the '
    "file assigns to a name gets the options a session reads (the table's session options but "
    "`iterations_per_loop`, which needs `util.set_iteration_per_loop` in the training loop) on "
    "the lines after it, on the NpuOptimizer's `parameter_map` (`.s = tf.compat.as_bytes(...)`, "
    "`.b`, `.i`); not one passed as a RunConfig's `session_config=` (NPURunConfig takes them).",
)
SESSION_WITHOUT_CONFIG = declare(
    "tf.session_without_config",
    "a session maker the NPU config cannot be added to where it is written: one row",
    "The adapter's graph runs on the NPU only in a session whose config carries its "
    "`NpuOptimizer` (`npu_config_proto()`, tf.session_config). Where the tool cannot add it "
    "itself, the maker is listed with where the config goes: a `tf.train.Supervisor` not bound "
    "to a plain name (its `managed_session()` / `prepare_or_wait_for_session()` calls cannot be "
    "found: the adapter's own porting tool, `convert_tf2npu/ast_impl.py` of "
    "https://github.com/Ascend/tensorflow, gives `managed_session` the config), a "
    "`MonitoredSession()` imported by its bare name (its default `ChiefSessionCreator()` has "
    "no config, and the tool does not spell a name the file does not import). Without it the "
    "session runs the graph on the host CPU, or fails on the NPU's operators.",
    kind=OPEN_WORK,
)
GPU_SETTING = declare(
    "tf.gpu_setting",
    "a GPU-only TensorFlow setting (gpu_options, memory growth, visible devices, XLA JIT): one row",
    "Settings that only mean something to a GPU are left as written and listed: `gpu_options` "
    "(allow_growth, memory fraction, visible_device_list), `tf.config.experimental."
    "set_memory_growth`, `set_visible_devices`, virtual/logical device configurations, XLA JIT "
    "(`global_jit_level`, `set_jit`, `jit_compile=True`, `jit_scope`), GPU probes "
    "(`tf.test.is_gpu_available`) and GPU device scopes or prefetches (`tf.device`, "
    "`prefetch_to_device`, `copy_to_device` given a GPU, also a name built by `%`, `+`, "
    "`.format` or an f-string), GPU automatic mixed precision (`TF_ENABLE_AUTO_MIXED_PRECISION*`, "
    "`rewrite_options.auto_mixed_precision`, `MixedPrecisionLossScaleOptimizer`, "
    "`enable_mixed_precision_graph_rewrite`: on the NPU mixed precision is the adapter's "
    '`precision_mode="allow_mix_precision"` of NPURunConfig, Ascend TensorFlow 1.15 training '
    "documentation), XLA flags (`XLA_FLAGS`, "
    "`TF_XLA_FLAGS`, `experimental_compile=True`, contrib's `experimental_jit_scope` and "
    "`xla.compile`: `npu_config_proto()` turns XLA JIT off, tf_adapter/python/npu_bridge/"
    "npu_init.py); in a TF 2.x (npu_device) file, which has neither NPURunConfig nor a session "
    "config, the mixed-precision, XLA and prefetch tips name npu_device's forms "
    "(`npu_device.global_options().precision_mode`, tf_adapter_2.x npu_device/configs/"
    "npu_config.py; `npu_device.set_npu_loop_size`; `tf2_tips` in rules/tf_migration.json). "
    "Harmless ones are caveats (they do nothing on the NPU), the others manual, "
    "each with what to use instead. A setting given as the value of another "
    "(`gpu_options=tf.GPUOptions(...)`, or a name the same scope binds to such calls only) "
    "is one row, the value's.",
    kind=OPEN_WORK,
)


class TfSessionSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        self.table = self.tables.tf_migration
        self.wrapper = self.table.text("config_proto_wrapper")
        self.strings = {k: Setting(v[0], v[1]) for k, v in self.table.raw["gpu_strings"].items()}
        raw = self.table.raw
        self.keywords: dict[str, tuple[str, int]] = {
            k: (v[0], int(v[1])) for k, v in raw["session_keywords"].items()
        }
        self.creators: dict[str, tuple[str, int, str]] = {
            k: (v[0], int(v[1]), v[2]) for k, v in raw["session_creators"].items()
        }
        self.methods: dict[str, dict[str, int]] = raw["session_methods"]
        self.made: dict[str, str] = {}  # names bound to a session_methods class's object
        # (scope, name) -> the literal text the scope binds the name to (None: also to
        # something else), for _parts
        self.texts: dict[tuple[int, str], list[str] | None] = {}
        # id(scope) -> {id(a Name its statements assign to): the value assigned}, for _named
        self.assigned: dict[int, dict[int, ast.expr]] = {}

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
        else:
            self._other_session(node, name)
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
            if self._setting_call(value) or self._named_setting(value):
                continue  # gpu_options=tf.GPUOptions(...) or a name bound to it: one row
            self._row(kw, f"{kw.arg}=", kw_setting)

    def leave_SimpleString(self, part: StringPart) -> None:
        """``"CUDA_VISIBLE_DEVICES"`` in a TensorFlow file (its PyTorch rules do not run there)."""
        if tf_of(self.ctx) is None or part.docstring or not isinstance(part.value, str):
            return
        setting = self.strings.get(part.value)
        if setting is not None:
            tip = tf2_tip(self.ctx, part.value, setting.tip)
            entry = Entry(part.value, CATEGORY, setting.action, tip)
            message = f"{part.value}: {tip}"
            self.ctx.unsupported(part.lines, part.value, entry, message, GPU_SETTING)

    def leave_Attribute(self, node: ast.Attribute) -> None:
        if tf_of(self.ctx) is None:
            return
        self._setting_value(node)
        setting = self.table.gpu_attributes.get(node.attr)
        if setting is None or isinstance(node.ctx, ast.Del):
            return
        parent = self.ctx.parent(node)
        if isinstance(parent, ast.Attribute) and parent.attr in self.table.gpu_attributes:
            return  # one row for config.gpu_options.x.y (its outer setting)
        self._row(node, self.ctx.snippet(node, updated=False), setting)

    def _setting_value(self, node: ast.Attribute) -> None:
        """A setting named but not called here (``jit_scope = tf.contrib.compiler.jit.
        experimental_jit_scope``), when any call of it is one (no argument to check)."""
        parent = self.ctx.parent(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            return  # (leave_Call)
        if isinstance(parent, ast.Attribute):
            return  # a longer name
        name = tf_qname(self.ctx, node)
        setting = self.table.gpu_settings.get(name)
        if setting is not None and not setting.argument:
            self._row(node, short(name), setting)

    def _applies(self, node: ast.Call, setting: Setting) -> bool:
        if not setting.argument:
            return True
        parts = [s for a in source_args(node) for s in self._parts(a.value)]
        return str(setting.argument).lower() in " ".join(parts).lower()

    def _parts(self, value: ast.expr) -> list[str]:
        """An argument's literal text (literal_parts); a name's, if the file binds it to
        literal text only (``dev = "/gpu:%d" % i``, then ``tf.device(dev)``)."""
        if isinstance(value, ast.Name):
            return self.texts.get((id(self.ctx.scope), value.id)) or []
        return literal_parts(value)

    def leave_Assign(self, node: ast.Assign) -> None:
        if tf_of(self.ctx) is None:
            return
        for target in node.targets:
            if isinstance(target, ast.Name):
                parts = literal_parts(node.value)
                key = (id(self.ctx.scope), target.id)  # (a name of the same scope only)
                known = self.texts.get(key, [])
                self.texts[key] = [*known, *parts] if parts and known is not None else None

    def _setting_call(self, value: ast.expr) -> bool:
        return (
            isinstance(value, ast.Call)
            and tf_qname(self.ctx, value.func) in self.table.gpu_settings
        )

    def _named_setting(self, value: ast.expr) -> bool:
        """A name the read's own scope binds, before it, to GPU settings' calls only
        (``opts = tf.GPUOptions(...)``, then ``gpu_options=opts``): not a parameter, not a name
        also bound to something else or bound elsewhere."""
        if not isinstance(value, ast.Name):
            return False
        scope = self.ctx.scope
        bindings = self.ctx.scopes.bindings_read(value, scope)
        if not bindings or any(b.scope is not scope for b in bindings):
            return False
        assigned = self.assigned.get(id(scope))
        if assigned is None:
            assigned = self.assigned[id(scope)] = {
                id(target): node.value
                for node in ast.walk(scope.node)
                if isinstance(node, ast.Assign)
                for target in node.targets
                if isinstance(target, ast.Name)
            }
        values = [assigned.get(id(b.node)) for b in bindings]
        return all(v is not None and self._setting_call(v) for v in values)

    @staticmethod
    def _keyword_applies(kw: ast.keyword, setting: Setting) -> bool:
        if isinstance(setting.argument, bool):
            return isinstance(kw.value, ast.Constant) and kw.value.value is setting.argument
        return True

    def _row(self, node: ast.AST, api: str, setting: Setting) -> None:
        tf_row(self.ctx, node, GPU_SETTING, api, setting.action, setting.tip)

    def _other_session(self, node: ast.Call, name: str) -> None:
        """A session given its config by another keyword (slim's ``session_config``), by a
        method of an object the file made (``sv.managed_session()``), or created by a default
        session creator (``MonitoredSession()``)."""
        ctx = self.ctx
        if name in self.keywords:
            keyword, position = self.keywords[name]
            label = ".".join(name.rsplit(".", 2)[-2:])
            self._session(node, name, position, keyword, label)
        elif name in self.creators:
            self._creator(node, name)
        elif name in self.methods:
            parent = ctx.parent(node)
            targets = parent.targets if isinstance(parent, ast.Assign) else []
            if len(targets) == 1 and isinstance(targets[0], ast.Name):
                self.made[targets[0].id] = name
            else:
                tip = self._method_tip(name)
                tf_row(ctx, node, SESSION_WITHOUT_CONFIG, short(name), "manual", tip)
        elif isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
            made = self.made.get(node.func.value.id)
            method = self.methods.get(made or "", {}).get(node.func.attr)
            if made is not None and method is not None:
                label = f"{made.rsplit('.', 1)[1]}.{node.func.attr}"
                self._session(node, made, method, label=label)

    def _method_tip(self, name: str) -> str:
        methods = " / ".join(f"{m}(config={self.wrapper}())" for m in self.methods[name])
        return (
            f"its sessions get the NPU config only if it is given one: call {methods} "
            "(npu_config_proto wraps a ConfigProto you pass: config_proto=...)"
        )

    def _creator(self, node: ast.Call, name: str) -> None:
        """``MonitoredSession()`` without a session creator makes ``ChiefSessionCreator()``,
        without a config: it gets one of the module's spelling, or a row."""
        ctx = self.ctx
        keyword, position, creator = self.creators[name]
        if any(kw.arg in (keyword, None) for kw in node.keywords) or len(node.args) > position:
            return  # a creator of its own (its config is the creator's call's), or **kwargs
        func = node.func
        if not isinstance(func, ast.Attribute):
            tip = f"give it {keyword}={creator}(config={self.wrapper}()): its default has no config"
            tf_row(ctx, node, SESSION_WITHOUT_CONFIG, short(name), "manual", tip)
            return
        before = ctx.snippet(node)
        module = ctx.code(func.value)
        value = f"{module}.{creator}(config={self.wrapper}())"
        add_keywords(ctx, node, [(keyword, value)], literal_values=False)
        message = f"{func.attr}: {keyword}={creator}(config={self.wrapper}()) added"
        tf_record(ctx, node, SESSION_CONFIG, message, before, ctx.snippet(node))

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
            write_session_options(ctx, parent, node, SESSION_CONFIG)

    def _session(
        self, node: ast.Call, name: str, position: int, keyword: str = "config", label: str = ""
    ) -> None:
        ctx = self.ctx
        args = source_args(node)
        config = next((a for a in args if a.keyword == keyword), None)
        if config is None and len(node.args) > position:
            config_value: ast.expr | None = node.args[position]
        else:
            config_value = config.value if config is not None else None
        before = ctx.snippet(node)
        short = label or name.rsplit(".", 1)[1]
        if config_value is None:
            if any(a.star for a in args):
                return  # *args / **kwargs may hold the config
            add_keywords(ctx, node, [(keyword, f"{self.wrapper}()")], literal_values=False)
            message = f"{short}: {keyword}={self.wrapper}() added"
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


def literal_parts(value: ast.expr) -> list[str]:
    """The literal text an argument is built from: a string, the parts of an f-string, of a
    ``%`` / ``+`` expression, the template of ``"...".format(...)``, both branches of a
    conditional expression, a dict's keys (``{"auto_mixed_precision": True}``); not what other
    calls return."""
    if isinstance(value, ast.Constant):
        return [value.value] if isinstance(value.value, str) else []
    if isinstance(value, ast.JoinedStr):
        return [p for v in value.values for p in literal_parts(v)]
    if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Mod, ast.Add)):
        return [*literal_parts(value.left), *literal_parts(value.right)]
    if isinstance(value, ast.IfExp):
        return [*literal_parts(value.body), *literal_parts(value.orelse)]
    if isinstance(value, ast.Dict):  # (a key set to False turns a setting off: not one)
        pairs = zip(value.keys, value.values)
        on = [k for k, v in pairs if k is not None and not _false(v)]
        return [p for k in on for p in literal_parts(k)]
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        if value.func.attr == "format":
            return literal_parts(value.func.value)
    return []


def _false(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value in (False, 0, "off", "OFF")
