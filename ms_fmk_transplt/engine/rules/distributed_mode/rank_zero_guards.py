"""Rank-0 guards of ``distributed -m`` (rule distributed_mode.rank_zero_guard; ``--no-rank-guards``
turns them off): once MAIN runs in one process per NPU, every process would save the same
checkpoints and images to the same paths and print every per-step log line. So, in MAIN:

* a statement that saves (``torch.save``, ``torchvision.utils.save_image``,
  ``.save_pretrained(...)``), with the statements right after it that only handle the saved file
  (``shutil``/``os`` calls on its path: ``if is_best: shutil.copyfile(filename, ...)``), and every
  ``print(...)`` statement inside a loop, go under ``if msft_is_main_process():`` (consecutive
  ones under one check); a ``torch.load`` of a file saved just above in the same block gets
  ``torch.distributed.barrier()`` before it;
* ``writer = SummaryWriter(...)`` becomes ``SummaryWriter(...) if msft_is_main_process() else
  None`` and its ``writer.<method>(...)`` statements are guarded -- only when every use of that
  name is one of those (or the writer handed to a function of the file under the same name);
* ``msft_is_main_process()`` is inserted with the other helpers.

Left alone: statements already under a rank check (an ``if`` whose test names a rank, the main
process or the master), prints calling a ``-t`` model or ``torch.distributed`` (a collective run
by one rank would hang the others), lines opted out with ``# msft: ignore``.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from ms_fmk_transplt.catalogue.rule_catalog import declare, rule_matches
from ms_fmk_transplt.engine.base import Concern, literal_value
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.options import kept_rule
from ms_fmk_transplt.engine.recorder import snippet_of
from ms_fmk_transplt.engine.rules.distributed_mode.existing_distributed import (
    existing_setup,
    is_converted,
)
from ms_fmk_transplt.engine.rules.distributed_mode.model_wraps import calls_in
from ms_fmk_transplt.engine.rules.optout.optout_comments import ignored_lines

RANK_ZERO_GUARD = declare(
    "distributed_mode.rank_zero_guard",
    "distributed -m: saves, TensorBoard writers and per-step prints run on rank 0 only",
    "Once MAIN runs as one process per NPU, every process would write the same checkpoints and "
    "images to the same paths (racing each other) and print every log line once per rank. A "
    "statement that saves (`torch.save`, `torchvision.utils.save_image`, `.save_pretrained`), "
    "with the `shutil`/`os` statements right after it that handle the saved file, and every "
    "`print(...)` statement inside a loop go under `if msft_is_main_process():` (a helper "
    "inserted with the others: true in the process of global rank 0, or when no process group "
    "is initialised); a `torch.load` of a file saved just above in the same block gets "
    "`torch.distributed.barrier()` before it. `writer = SummaryWriter(...)` becomes "
    "`... if msft_is_main_process() else "
    "None` and its `writer.<method>(...)` statements are guarded, when every use of the name can "
    "be followed. Statements already under a rank check, and prints that call the model or "
    "`torch.distributed` (a collective run by one rank would hang the others), are left alone.",
    opt_out="`--no-rank-guards` after `distributed -m MAIN` turns the guards off; "
    "`# msft: ignore[{id}]` at the end of a line keeps that line as written",
    option="distributed -m MAIN -t MODEL",
    option_edit=True,
)
_RANK_WORDS = ("rank", "main_process", "master")
MESSAGE = "only the process of rank 0 saves / prints this"


def _mentions_rank(test: cst.BaseExpression) -> bool:
    found: list[str] = []

    class Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            lowered = node.value.lower()
            found.extend(w for w in _RANK_WORDS if w in lowered)

    test.visit(Names())
    return bool(found)


class RankZeroGuards(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        self.t = self.tables.distributed_mode
        options = ctx.options
        self.targets = set(filter(None, (options.distributed_target or "").split(",")))
        self.active = options.rank_guards and kept_rule(RANK_ZERO_GUARD, options)
        self.guarded: set[int] = set()  # ids of original statements to guard
        self.writer_calls: set[int] = set()  # SummaryWriter(...) calls made conditional
        self.marked: dict[int, cst.BaseStatement] = {}  # id(updated statement) -> original
        self.barriers: set[int] = set()  # ids of original statements loading what rank 0 saved
        self.waiting: dict[int, cst.BaseStatement] = {}  # id(updated) -> original, of those
        self.loops = [0]  # loop depth, per function
        self.ranked: list[int] = []  # ids of the enclosing `if` statements that check a rank

    # -- planning on the original tree --------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        if not self.active or is_converted(node) or existing_setup(self.ctx, self.t, node):
            self.active = False
            return
        self.ignored = {
            line
            for line, rules in ignored_lines(self.ctx.source).items()
            if rules is None or rule_matches(RANK_ZERO_GUARD, rules)
        }
        _Writers(self, node).plan()
        self._plan_block(node.body)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.loops.append(0)

    def leave_FunctionDef(
        self, original: cst.FunctionDef, updated: cst.FunctionDef
    ) -> cst.FunctionDef:
        self.loops.pop()
        return updated

    def visit_For(self, node: cst.For) -> None:
        self.loops[-1] += 1

    def leave_For(self, original: cst.For, updated: cst.For) -> cst.For:
        self.loops[-1] -= 1
        return updated

    def visit_While(self, node: cst.While) -> None:
        self.loops[-1] += 1

    def leave_While(self, original: cst.While, updated: cst.While) -> cst.While:
        self.loops[-1] -= 1
        return updated

    def visit_If(self, node: cst.If) -> None:
        if self.active and _mentions_rank(node.test):
            self.ranked.append(id(node))  # already under a rank check: nothing guarded inside

    def leave_If(self, original: cst.If, updated: cst.If) -> cst.BaseStatement:
        if self.ranked and self.ranked[-1] == id(original):
            self.ranked.pop()
        return self._mark(original, updated)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if self.active and not self.ranked:
            self._plan_block(node.body)

    def _plan_block(self, statements: Sequence[cst.BaseStatement]) -> None:
        follow: set[str] = set()  # names and strings of the path the previous save wrote
        saved: set[str] = set()  # those of every path saved so far in the block
        for stmt in statements:
            paths = self._saved_paths(stmt)
            if paths is not None:
                self.guard(stmt)
                follow = paths
                saved |= paths if id(stmt) in self.guarded else set()
            elif self.loops[-1] and self._is_print(stmt):
                self.guard(stmt)
            elif follow and self._handles_file(stmt, follow):
                self.guard(stmt)
            else:
                follow = set()
                if saved and self._loads(stmt, saved):
                    self.barriers.add(id(stmt))  # the other ranks wait until rank 0 saved it
                    saved = set()

    def guard(self, stmt: cst.BaseStatement) -> None:
        """Plan the guard of a statement (unless a line of it is opted out, or it makes a call
        every rank must make)."""
        if any(self._collective(call) for call in calls_in(stmt)):
            return
        start, end = self.ctx.lines(stmt)
        if not self.ignored.intersection(range(start, end + 1)):
            self.guarded.add(id(stmt))

    def _saved_paths(self, stmt: cst.BaseStatement) -> set[str] | None:
        """The names of the path a saving statement writes to; None when it saves nothing."""
        if not isinstance(stmt, cst.SimpleStatementLine):
            return None
        for call in calls_in(stmt):
            func = call.func
            method = func.attr.value if isinstance(func, cst.Attribute) else ""
            if (self.ctx.qname(func) or "") in self.t.rank_zero_saves:
                return self._names(call.args[1:])
            if method in self.t.rank_zero_save_methods:
                return self._names(call.args)
        return None

    def _names(self, args: Sequence[cst.Arg]) -> set[str]:
        """The names (not modules) and strings of some arguments."""
        names: set[str] = set()

        class Names(cst.CSTVisitor):
            def visit_Name(self, node: cst.Name) -> None:
                names.add(node.value)

            def visit_SimpleString(self, node: cst.SimpleString) -> None:
                value = literal_value(node)
                # a literal Python cannot evaluate (an unknown \N{...} name) by its own text
                names.add(node.value if value is None else repr(value))

        for arg in args:
            arg.value.visit(Names())
        return names - set(self.ctx.import_bound)

    def _loads(self, stmt: cst.BaseStatement, saved: set[str]) -> bool:
        """A ``torch.load`` of a path rank 0 saved above in the block."""
        return any(
            (self.ctx.qname(c.func) or "") in self.t.rank_zero_loads
            and bool(self._names(c.args) & saved)
            for c in calls_in(stmt)
        )

    def _is_print(self, stmt: cst.BaseStatement) -> bool:
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
            return False
        small = stmt.body[0]
        if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
            return False
        return (self.ctx.qname(small.value.func) or "") in self.t.print_calls

    def _collective(self, call: cst.Call) -> bool:
        """A call every rank must make: a -t model's forward, torch.distributed."""
        if isinstance(call.func, cst.Name) and call.func.value in self.targets:
            return True
        return (self.ctx.qname(call.func) or "").startswith("torch.distributed.")

    def _handles_file(self, stmt: cst.BaseStatement, paths: set[str]) -> bool:
        """Only ``shutil``/``os`` calls, on a name of the path just saved."""
        if not isinstance(stmt, (cst.SimpleStatementLine, cst.If)):
            return False
        calls = calls_in(stmt)
        modules = self.t.rank_zero_file_modules
        if not calls or any(
            (self.ctx.qname(c.func) or "").split(".")[0] not in modules for c in calls
        ):
            return False
        return any(self._names(c.args) & paths for c in calls)

    # -- rewriting ----------------------------------------------------------------------------
    def _mark(self, original: cst.BaseStatement, updated: cst.BaseStatement) -> cst.BaseStatement:
        if id(original) in self.guarded:
            self.marked[id(updated)] = original
        if id(original) in self.barriers:
            self.waiting[id(updated)] = original
        return updated

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.BaseStatement:
        return self._mark(original, updated)

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if id(original) not in self.writer_calls:
            return updated
        check = cst.parse_expression(self.t.rank_zero_check)
        new = cst.IfExp(test=check, body=updated, orelse=cst.Name("None"))
        message = "the TensorBoard writer exists on rank 0 only (None elsewhere)"
        before, after = self.ctx.snippet(updated), snippet_of(self.ctx.code(new))
        self.ctx.record(self.ctx.lines(original), RANK_ZERO_GUARD, message, before, after)
        return new

    def leave_IndentedBlock(
        self, original: cst.IndentedBlock, updated: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        if not self.marked:
            return updated
        return updated.with_changes(body=self._wrap_runs(list(updated.body)))

    def _barrier(self, stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
        """``torch.distributed.barrier()`` before a statement loading what rank 0 saved."""
        original = self.waiting.pop(id(stmt), None)
        if original is None:
            return [stmt]
        # (the two kinds of BaseStatement there are, both with leading lines)
        assert isinstance(stmt, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        code = self.t.rank_zero_barrier
        barrier = cst.parse_statement(code + "\n").with_changes(leading_lines=stmt.leading_lines)
        message = "the other ranks wait until rank 0 has saved the file loaded here"
        self.ctx.record_insert(self.ctx.lines(original)[0], RANK_ZERO_GUARD, message, code)
        return [barrier, stmt.with_changes(leading_lines=())]

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        if not self.active or not (self.guarded or self.writer_calls):
            return updated
        helper = (self.t.rank_zero_helper, RANK_ZERO_GUARD, "rank-0 check for saves and prints")
        self.ctx.helper_lines.append(helper)
        if not self.marked:
            return updated
        return updated.with_changes(body=self._wrap_runs(list(updated.body)))

    def _wrap_runs(self, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """Each run of consecutive guarded statements under one ``if msft_is_main_process():``."""
        out: list[cst.BaseStatement] = []
        run: list[cst.BaseStatement] = []
        for stmt in [*body, None]:
            if stmt is not None and id(stmt) in self.marked:
                run.append(stmt)
                continue
            if run:
                out.append(self._guarded(run))
                run = []
            if stmt is not None:
                out.extend(self._barrier(stmt))
        return out

    def _guarded(self, run: list[cst.BaseStatement]) -> cst.If:
        first = run[0]
        # (the two kinds of BaseStatement there are, both with leading lines)
        assert isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        inner = [first.with_changes(leading_lines=()), *run[1:]]
        check = self.t.rank_zero_check
        new = cst.If(
            test=cst.parse_expression(check),
            body=cst.IndentedBlock(body=inner),
            leading_lines=first.leading_lines,
        )
        originals = [self.marked.pop(id(s)) for s in run]
        start, end = self.ctx.lines(originals[0])[0], self.ctx.lines(originals[-1])[1]
        before = snippet_of("\n".join(self._code(o) for o in originals))
        after = snippet_of(f"if {check}: " + "\n".join(self._code(s) for s in run))
        self.ctx.record_insert(start, RANK_ZERO_GUARD, MESSAGE, f"if {check}:")
        self.ctx.record((start, end), RANK_ZERO_GUARD, MESSAGE, before, after)
        return new

    def _code(self, stmt: cst.BaseStatement) -> str:
        return self.ctx.code(stmt.with_changes(leading_lines=()))


class _Writers:
    """``writer = SummaryWriter(...)`` whose every use can be followed: the call is made
    conditional and the ``writer.<method>(...)`` statements are guarded."""

    def __init__(self, guards: RankZeroGuards, module: cst.Module) -> None:
        self.guards, self.module = guards, module
        self.functions = {
            s.name.value: {p.name.value for p in s.params.params}
            for s in module.body
            if isinstance(s, cst.FunctionDef)
        }

    def plan(self) -> None:
        guards, ctx = self.guards, self.guards.ctx
        writers: dict[str, list[cst.Call]] = {}

        class Find(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                value, targets = node.value, node.targets
                if (
                    isinstance(value, cst.Call)
                    and (ctx.qname(value.func) or "") in guards.t.rank_zero_writers
                    and len(targets) == 1
                    and isinstance(targets[0].target, cst.Name)
                ):
                    writers.setdefault(targets[0].target.value, []).append(value)

        self.module.visit(Find())
        for name, calls in writers.items():
            statements = self._statements(name, len(calls))
            if statements is None:
                continue
            guards.writer_calls.update(id(c) for c in calls)
            for stmt in statements:
                guards.guard(stmt)

    def _statements(self, name: str, bindings: int) -> list[cst.SimpleStatementLine] | None:
        """The ``name.<method>(...)`` statements, when they (with the bindings, parameters and
        hand-overs to functions of the file) are every use of the name."""
        uses = _WriterUses(name, self.functions)
        self.module.visit(uses)
        if uses.names != uses.known + bindings:
            return None
        return uses.statements


class _WriterUses(cst.CSTVisitor):
    def __init__(self, name: str, functions: dict[str, set[str]]) -> None:
        self.name, self.functions = name, functions
        self.names = 0
        self.known = 0
        self.statements: list[cst.SimpleStatementLine] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.names += node.value == self.name

    def visit_Param(self, node: cst.Param) -> None:
        self.known += node.name.value == self.name

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        small = node.body[0] if len(node.body) == 1 else None
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            func = small.value.func
            if (
                isinstance(func, cst.Attribute)
                and isinstance(func.value, cst.Name)
                and func.value.value == self.name
            ):
                self.known += 1
                self.statements.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        params = self.functions.get(func.value, set()) if isinstance(func, cst.Name) else set()
        for arg in node.args:
            value = arg.value
            handed = isinstance(value, cst.Name) and value.value == self.name and not arg.star
            if handed and self.name in params:
                self.known += 1
