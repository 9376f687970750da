"""Span pass, once a TensorFlow file is walked: ``from npu_bridge.npu_init import *`` inserted
once into a TF 1.x file a change needs it in (rule tf.adapter_import), ``import npu_device`` and
``npu_device.open().as_default()`` into a TF 2.x entry point (rule tf.npu_device), both after
the file's first module-level TensorFlow import. The ``--npu-option`` values of TF 2.x go to
``npu_device.global_options()`` right before the device is opened."""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import INSERTED_LINES, OPEN_WORK, declare
from ms_fmk_transplt.engine.options import kept_rule
from ms_fmk_transplt.engine.rules.family_spec import Finishing
from ms_fmk_transplt.engine.rules.imports.torch_npu_spans import TorchNpuInsert
from ms_fmk_transplt.engine.rules.tf.adapter_options import check_requirements, option_set
from ms_fmk_transplt.engine.rules.tf.tf_distributed_spans import horovod_import_rows
from ms_fmk_transplt.engine.rules.tf.tf_edits import CATEGORY, literal
from ms_fmk_transplt.engine.rules.tf.tf_files import tf_of
from ms_fmk_transplt.engine.spans.module_facts import ModuleFacts
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.tables.tf_migration_table import TfMigrationTable
from ms_fmk_transplt.tables.unsupported_table import Entry

ADAPTER_IMPORT = declare(
    "tf.adapter_import",
    "`from npu_bridge.npu_init import *` inserted once into a file a change needs it in",
    "The adapter's names (NPURunConfig, NPUEstimator, npu_config_proto, npu_ops, "
    "get_npu_rank_id, ...) come from `npu_bridge.npu_init`, as the adapter's documentation "
    "imports them; importing it also registers the NPU with TensorFlow. It goes right after the "
    "file's first module-level TensorFlow import (so the file's later imports keep their names), "
    "once, into each file a change of the family needs it in; a file that imports it "
    "already gets none. A file of a TF 2.x program running TF 1.x graph code through "
    "`tf.compat.v1` (the program model decides: its pin, else the names its code uses) gets the "
    "TF 2.x adapter's form instead, as the adapter's compat.v1 porting guide writes it: `import "
    "npu_device`, `from npu_device.compat.v1.npu_init import *`, `npu_device.compat.enable_v1()` "
    "(npu_bridge exists only for TF 1.15; the last only at a program's entry, and not where "
    "eager-only code runs or in a library module nobody imports: tf.compat_mode). A file of a "
    "TF 2.x eager program whose graph code needs one of the names (a `MonitoredSession` in a "
    "`tf.Graph()`) gets the first two, never `enable_v1()`: the adapter's compat.v1 build "
    "renames `from npu_bridge` to `from npu_device.compat.v1` (tf_adapter_2.x/compat_v1/"
    "upgrade_tf1_compat_tf2.py). It is "
    "bookkeeping: the conversion rate does not count it.",
    bookkeeping=True,
    fixed=INSERTED_LINES,
)
NPU_DEVICE = declare(
    "tf.npu_device",
    "TF 2.x: `import npu_device` and `npu_device.open().as_default()` at the program's entry",
    "A TF 2.x (eager, Keras) program runs on the NPU once the adapter's device is opened and "
    "made the default, before any model or tensor is created. The device is opened at the "
    "entry of each TF 2.x program (the program model's: a `__main__` guard, a script a launcher "
    "runs, a console script, a TensorFlow module nobody imports that runs module-level code), as "
    "the first lines of its `__main__` guard, else after its first module-level TensorFlow "
    "import; an entry whose TensorFlow code is in the modules it imports gets `import "
    "npu_device` there too. Any TF 2.x file a change needs `npu_device` in gets the import. "
    "Options given with `--npu-option` are set on `npu_device.global_options()` before the "
    "device opens. A file that opens it already is left alone; a TF 1.x program (a pin, a TF "
    "1.x-only name such as `tf.random_uniform`) gets none.",
    fixed=INSERTED_LINES,
)


def compat_mode_row(ctx: SpanContext) -> bool:
    """Whether a TF 2.x file running compat.v1 graph code that would turn the compat mode on
    cannot (a row instead): it runs eager code too (``.numpy()``, ``tf.function``, ...), which
    ``enable_v1()``'s ``disable_v2_behavior()`` breaks at import, or it is a library module
    nobody imports (its importer's entry is where the mode goes)."""
    tf = tf_of(ctx)
    if tf is None or tf.style != "tf2_compat" or not (tf.enables_compat or tf.compat_library):
        return False
    data = ctx.source.data
    markers = ctx.tables.tf_migration.raw["eager_markers"]
    found = sorted((data.find(m.encode()), m) for m in markers if m.encode() in data)
    if found:
        at, marker = found[0]
        line = data.count(b"\n", 0, at) + 1
        tip = COMPAT_EAGER.format(marker=marker)
    elif tf.compat_library:
        line, tip = 1, COMPAT_LIBRARY
    else:
        return False
    entry = Entry("npu_device.compat.enable_v1", CATEGORY, "manual", tip)
    ctx.unsupported((line, line), entry.key, entry, f"{entry.key}: {tip}", COMPAT_MODE)
    return True


COMPAT_MODE = declare(
    "tf.compat_mode",
    "a TF 2.x file running compat.v1 graph code where `npu_device.compat.enable_v1()` cannot go: "
    "one row",
    "`npu_device.compat.enable_v1()` calls `tf.compat.v1.disable_v2_behavior()` when it runs "
    "(tf_adapter_2.x npu_device/npu_device.py), so eager-only code after it fails (`.numpy()` "
    "of a tensor, a branch on `tf.executing_eagerly()`, `run_functions_eagerly`; `tf.function` "
    "and `GradientTape` still run, in the graph). An entry of a TF 2.x program "
    "whose own code runs compat.v1 graph code gets it (tf.adapter_import), unless the file runs "
    "such eager code too: then it is not inserted and this row says where the eager code "
    "starts. A module nobody imports that the program model takes for an entry only by its "
    "module-level calls (a library registering its classes) gets none either: the compat mode "
    "is its importer's to turn on, and this row says so.",
    kind=OPEN_WORK,
)
COMPAT_EAGER = (
    "this file runs TF 1.x graph code through tf.compat.v1 and eager code too ({marker} on this "
    "line): npu_device.compat.enable_v1() (disable_v2_behavior() at import, tf_adapter_2.x "
    "npu_device/npu_device.py) would break the eager part, so it is not inserted; run the graph "
    "part in a process that calls npu_device.compat.enable_v1() first, or port it to TF 2.x "
    "(npu_device.open())"
)
COMPAT_LIBRARY = (
    "a library module running TF 1.x graph code through tf.compat.v1 that no file of the "
    "project imports: npu_device.compat.enable_v1() is not inserted here; the program that "
    "imports it calls it at its entry, before any TensorFlow code runs, unless that program "
    "runs eager code (enable_v1 disables it)"
)


def tf_statements(style: str, table: TfMigrationTable, changed: bool) -> list[tuple[str, str, str]]:
    """What a TensorFlow notebook gets once (notebook.py): the adapter's import when a cell
    changed (TF 1.x), the NPU device opened (TF 2.x: a notebook is an entry point)."""
    if style == "tf1":
        if not changed:
            return []
        statement = table.text("adapter_import")
        return [(statement, ADAPTER_IMPORT, f"{statement} inserted")]
    imported = table.text("npu_device_import")
    opened = table.text("npu_device_open")
    return [
        (imported, NPU_DEVICE, f"{imported} inserted"),
        (opened, NPU_DEVICE, "NPU device opened as the default"),
    ]


class TfAdapterInsert(TorchNpuInsert):
    """The family's inserted lines, once the pass over a file is done."""

    def __init__(self, ctx: SpanContext, facts: ModuleFacts) -> None:
        super().__init__(ctx, facts)
        self.table = ctx.tables.tf_migration

    def run(self, changed: bool | None = None) -> None:
        ctx, tf = self.ctx, tf_of(self.ctx)
        if tf is None or ctx.options.tf_notebook_style:
            return  # (a notebook's cell: the notebook adds them once, notebook.py)
        index, before = self._tf_import_index(), False
        if index is None and not tf.imports_tf and tf.entry:
            self._open_in_main_guard()
            return
        if index is None:  # TensorFlow imported in functions only: at the top of the module
            index, before = self._insertion_point(self.lines)
        data = ctx.source.data
        inserted: list[tuple[str, str, str]] = []
        opening: list[tuple[str, str, str]] = []
        if tf.needs_adapter and tf.style in ("tf2_compat", "tf2"):
            # (a TF 2.x file: npu_bridge's names are the TF 2.x adapter's npu_device.compat.v1,
            # tf_adapter_2.x/compat_v1/upgrade_tf1_compat_tf2.py; a tf2 file's compat.v1 graph
            # code (a MonitoredSession in a tf.Graph) runs beside eager code: no enable_v1())
            if b"npu_device.compat" not in data:
                enable = tf.style == "tf2_compat" and not compat_mode_row(ctx) and tf.enables_compat
                inserted += [
                    (line, ADAPTER_IMPORT, f"{line} inserted (TF 2.x running compat.v1 code)")
                    for line in self.table.tf2_compat_import
                    if line != "import npu_device" or not self._imports_npu_device()
                    if enable or not line.endswith("enable_v1()")
                ]
        elif tf.needs_adapter and not self._imports_npu_bridge():
            statement = self.table.text("adapter_import")
            inserted.append((statement, ADAPTER_IMPORT, f"{statement} inserted"))
        elif tf.needs_npu_device and tf.style == "tf2_compat" and not self._imports_npu_device():
            # (TF 2.x compat.v1 code a change names npu_device in: NpuLossScaleOptimizer)
            statement = self.table.text("npu_device_import")
            inserted.append((statement, NPU_DEVICE, f"{statement} inserted"))
        if tf.style == "tf2" and (tf.entry or tf.needs_npu_device):
            if not self._imports_npu_device() and not any(
                line == self.table.text("npu_device_import") for line, _, _ in inserted
            ):
                statement = self.table.text("npu_device_import")
                inserted.append((statement, NPU_DEVICE, f"{statement} inserted"))
            if tf.entry and b"npu_device.open(" not in data:
                for name, value in self._device_options():
                    line = f"npu_device.global_options().{name} = {literal(value)}"
                    opening.append((line, NPU_DEVICE, option_set([name])))
                statement = self.table.text("npu_device_open")
                opening.append((statement, NPU_DEVICE, "NPU device opened as the default"))
        if opening and not self._in_main_guard(opening):
            inserted += opening  # a script without a __main__ guard: at module level
        if inserted:
            self._insert(index, before, inserted)

    def _open_in_main_guard(self) -> None:
        """The entry of a TF 2.x program whose TensorFlow calls are in the modules it imports:
        the adapter imported and its device opened as the first lines of the ``__main__``
        guard, or at the top of a script without one."""
        if b"npu_device.open(" in self.ctx.source.data:
            return
        statement = self.table.text("npu_device_import")
        lines = [
            (
                statement,
                NPU_DEVICE,
                f"{statement} inserted (its TensorFlow code is in the modules it imports)",
            )
        ]
        for name, value in self._device_options():
            line = f"npu_device.global_options().{name} = {literal(value)}"
            lines.append((line, NPU_DEVICE, option_set([name])))
        opened = self.table.text("npu_device_open")
        lines.append((opened, NPU_DEVICE, "NPU device opened as the default"))
        if not self._in_main_guard(lines):
            self._insert(*self._insertion_point(self.lines), lines)

    def _in_main_guard(self, lines: list[tuple[str, str, str]]) -> bool:
        """The lines as the first of the ``__main__`` guard's body (importing the module then
        opens no device); False when there is none, or its body starts on the ``if`` line."""
        ctx, tf = self.ctx, tf_of(self.ctx)
        if tf is None or tf.main_guard is None:
            return False
        line, column = tf.main_guard
        start = ctx.source.starts[line - 1]
        indent = ctx.source.data[start : start + column]
        if indent.strip(b" \t"):
            return False
        newline = ctx.source.newline
        text = "".join(indent.decode() + code + newline for code, _, _ in lines)
        ctx.replace(start, start, text, checked=True)
        for code, rule, message in lines:
            ctx.record_insert(line, rule, message, code, first=True)
        return True

    def _device_options(self) -> list[tuple[str, object]]:
        options = self.ctx.tables.tf_adapter.options
        return [
            (name, value)
            for name, value in self.ctx.options.npu_options
            if name in options and "npu_device" in options[name].places
        ]

    def _tf_import_index(self) -> int | None:
        """The index of the line after the first module-level import of TensorFlow (or of
        Horovod's TensorFlow front end: a file may import TensorFlow through it alone)."""
        for roots in (self.table.import_roots, ("horovod",)):
            for i, line in enumerate(self.lines):
                if any(self._root_is(node, root) for node in line.imports for root in roots):
                    return i + 1  # (after a compound statement holding it: a try block)
        return None

    def _imports_npu_bridge(self) -> bool:
        """An import of the adapter (a comment or string naming it is none)."""
        return any(
            self._root_is(node, "npu_bridge") for line in self.lines for node in line.imports
        )

    def _imports_npu_device(self) -> bool:
        return any(
            isinstance(node, ast.Import) and any(a.name == "npu_device" for a in node.names)
            for line in self.lines
            for node in line.imports
        )


def finish(ctx: SpanContext, facts: ModuleFacts, done: Finishing) -> None:
    """The family's finishing step (Family.finish), for a TensorFlow file: the adapter options
    it lacks, its Horovod import, and the adapter's import or the NPU device opened."""
    if tf_of(ctx) is None:
        return
    check_requirements(ctx)
    horovod_import_rows(ctx)
    if kept_rule(ADAPTER_IMPORT, ctx.options) or kept_rule(NPU_DEVICE, ctx.options):
        # (--select / --ignore keeping neither, as a kit's tree of the project as written
        # does: no adapter line, the device left as it is)
        TfAdapterInsert(ctx, facts).run()
