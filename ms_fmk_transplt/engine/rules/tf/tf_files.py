"""Which files the ``tf`` family acts on and how: a file is TensorFlow when a module-level or
nested import names TensorFlow (or the adapter, or Horovod's TensorFlow front ends); its style is
TF 1.x (graph code, sessions, Estimators, ``tf.compat.v1``: the adapter's ``npu_bridge``) or
TF 2.x (eager Keras: ``npu_device``); an entry point is a file with a ``__main__`` guard or
module-level calls. Worked out once per file from its import statements and bytes."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from ms_fmk_transplt.engine.program_facts import FileProgram
from ms_fmk_transplt.engine.rules.tf.tf_pipelines import function_uses
from ms_fmk_transplt.safety.chunks import parse_piece
from ms_fmk_transplt.tables.tf_migration_table import TfMigrationTable

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.spans.module_facts import ModuleFacts
    from ms_fmk_transplt.engine.spans.span_context import SpanContext
    from ms_fmk_transplt.safety.chunks import Piece


@dataclass
class TfFile:
    """What the ``tf`` concerns know of the file being walked, and what they ask of the end of
    the pass (the adapter's import, the NPU device opened)."""

    style: str  # "tf1", "tf2" or "tf2_compat" (TF 2.x running TF 1.x graph code: compat.v1)
    horovod: dict[str, str]  # names bound to Horovod's TensorFlow modules -> "tf1" / "keras"
    entry: bool  # a __main__ guard or module-level calls: where TF2's NPU device is opened
    calls_initialize_system: bool  # the code runs npu_ops.initialize_system() already
    computes: bool  # it names TF 2.x compute (Keras, tf.function, tf.data, ...)
    torch: bool  # it imports torch too: the PyTorch rules run as well
    tf1_runtime: bool  # it calls TF 1.x-only APIs through `tensorflow` itself: it runs TF 1.x
    # the code adds the NpuOptimizer to its session configs itself (the documented way)
    configures_npu: bool = False
    needs_adapter: bool = (
        False  # a change names something `from npu_bridge.npu_init import *` gives
    )
    config_bound: set[str] = field(default_factory=set)  # names bound to ConfigProto(...) calls
    other_bound: set[str] = field(default_factory=set)  # ... and names bound to anything else
    # names passed as a RunConfig's session_config= (NPUEstimator sets its options there)
    run_config_sessions: set[str] = field(default_factory=set)
    main_guard: tuple[int, int] | None = None  # (line, column) of the __main__ guard's body
    needs_npu_device: bool = False  # a change names npu_device (TF 2.x)
    # the adapter options the code sets, per place (NPURunConfig, session, ...), and where first
    option_values: dict[str, dict[str, object]] = field(default_factory=dict)
    option_lines: dict[str, tuple[int, int]] = field(default_factory=dict)
    # a notebook's cell: the names the notebook's imports bind (in any cell) -> their paths
    notebook_imports: dict[str, str] = field(default_factory=dict)
    # the run's program model decided the style and the entry (program_model.py); else (one
    # file checked alone) this file's own bytes did
    from_programs: bool = False
    imports_tf: bool = True  # False: an entry of a TF 2.x program whose TF calls are elsewhere
    passes_horovod: tuple[str, ...] = ()  # calls the file passes Horovod to as a value
    # functions the file uses as training or evaluation input (tf_pipelines.function_uses)
    function_uses: dict[str, set[str]] = field(default_factory=dict)
    # TF 2.x compat.v1 code: the file turns the compat mode on (enable_v1): the entry of such a
    # program, or any such file when no program model says otherwise (one file checked alone)
    enables_compat: bool = True
    compat_library: bool = False  # compat.v1 code of a module nobody imports (FileProgram)
    # the TensorFlow a notebook runs on, as the program model decided it ("": its style's)
    runtime: str = ""
    program_entry: bool = False  # the program model's entry of a TensorFlow program
    # the calls the __main__ guard's body makes as statements, and those of the module's body
    # (tf.horovod pairs init_resource() with shutdown_resource() in the function they run)
    guard_calls: list[ast.Call] = field(default_factory=list)
    module_calls: list[ast.Call] = field(default_factory=list)
    module_tail: ast.stmt | None = None  # the module's last statement
    shutdown_paired: bool = False  # tf.horovod inserted shutdown_resource() once already
    tpu_estimator_calls: list[ast.Call] = field(default_factory=list)  # calls named TPUEstimator

    @property
    def tf1(self) -> bool:
        """TF 1.x graph code: the adapter's sessions, configs and Estimators (TF 1.x, or TF 2.x
        through compat.v1)."""
        return self.style in ("tf1", "tf2_compat")

    @property
    def version(self) -> str:
        """The TensorFlow the file runs on: "tf1" or "tf2" (TF 2.x compat.v1 code is TF 2.x)."""
        return self.runtime or ("tf1" if self.style == "tf1" else "tf2")

    @property
    def config_names(self) -> set[str]:
        """Names the file binds only to ``ConfigProto(...)`` calls (their sessions need no
        wrapping)."""
        return self.config_bound - self.other_bound

    def add_tree(self, tree: ast.Module, table: TfMigrationTable) -> None:
        """What (a piece of) the module's tree says: module-level calls make it an entry point,
        as its ``__main__`` guard does; the names it binds to ``ConfigProto(...)`` calls."""
        body = tree.body
        calls = any(isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) for s in body)
        if calls and self.computes and not self.from_programs:
            self.entry = True
        for stmt in body:
            if self.main_guard is None and _is_main_guard(stmt):
                first = stmt.body[0]  # type: ignore[attr-defined]
                self.main_guard = (first.lineno, first.col_offset)
                self.guard_calls += _statement_calls(stmt.body)  # type: ignore[attr-defined]
        self.module_calls += _statement_calls(body)
        self.module_tail = body[-1] if body else self.module_tail
        function_uses(tree, self.function_uses)
        config, other = self.config_bound, self.other_bound
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "session_config":
                if isinstance(node.value, ast.Name):
                    self.run_config_sessions.add(node.value.id)
            if isinstance(node, ast.Call) and _last_name(node.func) == "TPUEstimator":
                self.tpu_estimator_calls.append(node)
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                value = node.value
                for target in targets:
                    if not isinstance(target, ast.Name):
                        continue
                    func = value.func if isinstance(value, ast.Call) else None
                    last = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                    built = last in ("ConfigProto", table.text("config_proto_wrapper"))
                    (config if built else other).add(target.id)


def _last_name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _statement_calls(body: list[ast.stmt]) -> list[ast.Call]:
    return [s.value for s in body if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)]


def _roots(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level or node.module is None:
        return []
    return [node.module, *(f"{node.module}.{a.name}" for a in node.names)]


def tf_file(
    imports: list[ast.Import | ast.ImportFrom],
    source: bytes,
    table: TfMigrationTable,
    notebook_style: str = "",
    program: FileProgram | None = None,
) -> TfFile | None:
    """The file's TensorFlow facts, or None for a file that imports no TensorFlow;
    ``notebook_style``: a cell of a TensorFlow notebook of that style (its imports may be in
    another cell); ``program``: the style the run's programs give the file ("" for none) and
    whether it is the entry of a TF 2.x program (the device is opened there, even when the
    file itself imports no TensorFlow)."""
    horovod: dict[str, str] = {}
    is_tf = torch = False
    for node in imports:
        for path in _roots(node):
            if path.split(".")[0] in table.import_roots:
                is_tf = True
            torch = torch or path.split(".")[0] == "torch"
        for alias in node.names:
            if isinstance(node, ast.Import):
                path, bound = alias.name, alias.asname
            elif node.module and not node.level:
                path, bound = f"{node.module}.{alias.name}", alias.asname or alias.name
            else:
                continue
            kind = table.horovod_modules.get(path)
            if kind is not None and bound:
                horovod[bound] = kind
                is_tf = True
    entry = program is not None and program.entry
    if not is_tf and not notebook_style and not entry:
        return None
    if program is not None:  # parameters a caller passes Horovod in (horovod_values.py)
        horovod = {**program.horovod, **horovod}
    style = notebook_style or (program.style if program is not None else "")
    if not style:
        style = "tf1" if any(m in source for m in table.tf1_markers) else "tf2"
    if program is None:  # an entry point that computes with TensorFlow (tokenizers' tests: none)
        entry = b"__main__" in source and any(m in source for m in table.tf2_markers)
    return TfFile(
        style=style,
        horovod=horovod,
        entry=entry,
        from_programs=program is not None,
        imports_tf=is_tf,
        passes_horovod=program.passes_horovod if program is not None else (),
        enables_compat=program.compat_entry if program is not None else True,
        compat_library=program.compat_library if program is not None else False,
        calls_initialize_system=b"initialize_system" in source,
        computes=any(m in source for m in table.tf2_markers),
        torch=torch,
        # the programs say which TensorFlow runs the file; alone, its bytes do
        tf1_runtime=style == "tf1"
        if program is not None and program.style
        else any(m in source for m in table.tf1_runtime_markers),
        configures_npu=b'"NpuOptimizer"' in source or b"'NpuOptimizer'" in source,
        program_entry=program is not None and program.program_entry,
    )


def _is_main_guard(stmt: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` at module level."""
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare):
        return False
    test = stmt.test
    sides = [test.left, *test.comparators]
    return (
        len(sides) == 2
        and isinstance(test.ops[0], ast.Eq)
        and any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides)
        and any(isinstance(x, ast.Constant) and x.value == "__main__" for x in sides)
    )


def tf_anchor_words(table: TfMigrationTable, bound: dict[str, str]) -> tuple[str, ...]:
    """The words that anchor a TensorFlow file's statements: the table's, and each name an
    import binds to something of TensorFlow (``from tensorflow.keras import layers``)."""
    names = sorted(
        name for name, path in bound.items() if name and path.split(".")[0] in table.import_roots
    )
    return (*table.anchor_words, *names)


def read_file_facts(
    ctx: SpanContext, facts: ModuleFacts, source: bytes, kept: list[tuple[Piece, ast.Module]]
) -> None:
    """The family's file facts (Family.file_facts): ``ctx.tf``, the file's TensorFlow facts
    (None: not a TensorFlow file), from what the run's program model says of it."""
    notebook = ctx.options.tf_notebook_style
    project = ctx.options.project
    program = None
    if project is not None and not notebook:  # (what the run's program model says of the file)
        program = project.programs.for_file(ctx.path)
    tf = tf_file(facts.imports, source, ctx.tables.tf_migration, notebook, program)
    if tf is not None and notebook:
        tf.notebook_imports = dict(ctx.options.tf_notebook_imports)
        tf.runtime = ctx.options.tf_notebook_version
    if tf is not None:  # (a large file's earlier pieces are parsed again, one at a time)
        for piece, tree in kept:
            tf.add_tree(tree or parse_piece(source, piece), ctx.tables.tf_migration)
    ctx.tf = tf


def anchor_words(ctx: SpanContext) -> tuple[str, ...]:
    """A TensorFlow file's anchor words (Family.anchor_words; see tf_anchor_words)."""
    if ctx.tf is None:
        return ()
    return tf_anchor_words(ctx.tables.tf_migration, ctx.import_bound)


def tf_of(ctx: SpanContext) -> TfFile | None:
    """The file's TensorFlow facts, as read_file_facts left them on the context."""
    return cast("TfFile | None", ctx.tf)


def tf_facts(ctx: SpanContext) -> TfFile:
    """The TensorFlow facts of a file the tf family's concerns run on (it has them)."""
    tf = tf_of(ctx)
    if tf is None:
        raise LookupError(f"{ctx.path}: not a TensorFlow file")
    return tf
