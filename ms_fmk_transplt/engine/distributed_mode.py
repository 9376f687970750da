"""``distributed -m MAIN -t MODEL``: a single-card training script becomes data-parallel over
several NPUs (rules distributed_mode.*; data: the distributed_mode section of the table).

Applied to the -m file only, after the normal migration rules:

* ``msft_local_rank()`` / ``msft_init_distributed()`` helpers after ``import torch_npu``; the
  init call is the first statement of the ``if __name__ == "__main__":`` block (the entry point,
  never module import), or, in a script without that guard, right before its first statement
  that is not an import, definition or docstring. Rank, world size and local rank come from
  RANK/WORLD_SIZE/LOCAL_RANK (torchrun, run_distributed_npu.sh) or RANK_ID/RANK_SIZE/DEVICE_ID.
* every training DataLoader (one that shuffles) gets ``sampler=DistributedSampler(dataset,
  shuffle=...)`` (its ``shuffle`` moves into the sampler; engine/dataloader_sharding.py, also for
  a ``**kwargs`` dict that is a literal of the function); a loader without shuffle is taken as
  evaluation and left whole (every rank reads all of it, so metrics stay global); loaders with
  their own sampler or batch_sampler are left, with a warning; ``for epoch in ...`` loops in the
  same function call ``loader.sampler.set_epoch``.
* each -t model (several: ``-t a,b``) is wrapped in DistributedDataParallel in the function that
  assigns it, after its last in-place initialisation (engine/model_wraps.py);
  ``nn.DataParallel(model)`` is removed; after the wrap, ``model.<attr>`` that DDP does not
  forward (``state_dict``, ``load_state_dict``, custom attributes) goes through ``model.module``,
  also in functions taking ``model``; modules an optimizer trains that -t does not name are open
  work (engine/trained_modules.py).
* ``set_device(...)`` binds to ``msft_local_rank()``; ``.cuda(i)``/``.npu(i)`` drop the index so
  every process uses its own current NPU.

A file already distributed (its own process group, spawn, DDP or DistributedSampler) is only
migrated (engine/existing_distributed.py). Saves and per-step prints are guarded by a separate
concern (engine/rank_zero_guards.py).
"""

from __future__ import annotations

import re

import libcst as cst
from libcst.helpers import get_full_name_for_node

from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.dataloader_sharding import (
    kwargs_name,
    resolve_kwargs,
    shard_call,
    shard_kwargs_call,
)
from ms_fmk_transplt.engine.existing_distributed import (
    existing_setup,
    is_converted,
    report_existing,
)
from ms_fmk_transplt.engine.model_wraps import ModelWraps, Scope, body_of, calls_in
from ms_fmk_transplt.engine.todo_comments import CATEGORY, todo_text
from ms_fmk_transplt.engine.trained_modules import report_untargeted, trained_modules
from ms_fmk_transplt.events import Severity
from ms_fmk_transplt.rule_catalog import NOTICE, OPEN_WORK, declare
from ms_fmk_transplt.tables.unsupported_table import Entry

_OPTION = "distributed -m MAIN -t MODEL"
INIT = declare(
    "distributed_mode.init",
    "distributed -m: rank helpers and the hccl process group, initialised at the entry point",
    "`msft_local_rank()` and `msft_init_distributed()` are inserted after the imports of MAIN "
    "(rank, world size and local rank from `RANK`/`WORLD_SIZE`/`LOCAL_RANK` -- torchrun or "
    "run_distributed_npu.sh -- or the Ascend `RANK_ID`/`RANK_SIZE`/`DEVICE_ID`; an `hccl` process "
    "group; each process binds its own NPU). The call is the first statement of the `if __name__ "
    '== "__main__":` block, never at import time, or comes before the first statement that is not '
    "an import or a definition in a script without that guard.",
    option=_OPTION,
)
SAMPLER = declare(
    "distributed_mode.sampler",
    "distributed -m: every training DataLoader gets a DistributedSampler",
    "A DataLoader that shuffles is a training loader: it gets "
    "`sampler=DistributedSampler(dataset, shuffle=...)` so that each rank reads its own shard "
    "(its `shuffle` moves into the sampler). A loader without shuffle is taken as evaluation and "
    "left whole (every rank reads all of it, so metrics stay global); loaders with their own "
    "sampler, or configured through `**kwargs`, are left with a WARNING.",
    option=_OPTION,
)
SET_EPOCH = declare(
    "distributed_mode.set_epoch",
    "distributed -m: `loader.sampler.set_epoch(epoch)` at the top of each epoch loop",
    "A DistributedSampler shuffles with a seed derived from the epoch; without `set_epoch` every "
    "epoch reads the same order. `for epoch in ...` loops in the function that uses a sharded "
    "loader call it first.",
    option=_OPTION,
)
DDP = declare(
    "distributed_mode.ddp",
    "distributed -m: the -t model wrapped in DistributedDataParallel",
    "The model named by `-t` (default `model`) is wrapped in `DistributedDataParallel` right "
    "after the last statement of the function that assigns it (so after `amp.initialize`), with "
    "the process's own NPU. A `-t` name that is never assigned gets a WARNING.",
    option=_OPTION,
)
DATA_PARALLEL = declare(
    "distributed_mode.data_parallel",
    "distributed -m: `nn.DataParallel(model)` removed (DDP replaces it)",
    "DataParallel is not supported on the NPU and would nest inside DDP; the wrapper call is "
    "replaced by its model argument.",
    option=_OPTION,
)
MODULE_ACCESS = declare(
    "distributed_mode.module_access",
    "distributed -m: `model.state_dict()` and custom attributes go through `model.module`",
    "After the wrap, `model` is the DDP wrapper: attributes DDP does not forward "
    "(`state_dict`, `load_state_dict`, custom attributes) are reached through `model.module`, "
    "also in functions that take the model as a parameter, so checkpoints keep their keys.",
    option=_OPTION,
)
_FIXED_NPU = re.compile(r"npu:\d+")  # a device string with a fixed index, once migrated
DEVICE = declare(
    "distributed_mode.device",
    "distributed -m: `set_device(...)` binds to the local rank; `.cuda(i)` drops its index",
    "Each process must use its own NPU: `set_device(...)` gets `msft_local_rank()`, and "
    "`.cuda(i)` / `.npu(i)` lose the fixed index so that they use the process's current NPU, "
    'and so do device strings with a fixed index (`torch.device("cuda:0")` -> `"npu"`).',
    option=_OPTION,
)
UNSHARDED_LOADER = declare(
    "distributed_mode.unsharded_loader",
    "distributed -m: a DataLoader the tool cannot shard (own sampler, `**kwargs`): manual row",
    "A loader with its own `sampler`/`batch_sampler`, or configured through `**kwargs` (so whether "
    "it shuffles is unknown), is not given a DistributedSampler: every rank would read the whole "
    "dataset. It is an open-work row (category `incomplete_migration`, counted against the "
    "conversion rate) and the line gets a `# msft: TODO[distributed_mode.unsharded_loader]` "
    "comment: pass `shuffle=` explicitly, or shard it with a DistributedSampler yourself.",
    kind=OPEN_WORK,
    option=_OPTION,
)
UNWRAPPED_MODEL = declare(
    "distributed_mode.unwrapped_model",
    "distributed -m: the -t model is never assigned in MAIN, so nothing is wrapped in DDP",
    "Without DistributedDataParallel every rank trains its own replica and they drift apart. "
    "When no statement of MAIN assigns the `-t` name, the run lists an open-work row (category "
    "`incomplete_migration`) and the inserted `msft_init_distributed()` line gets a "
    "`# msft: TODO[distributed_mode.unwrapped_model]` comment: give the right name with `-t`, or "
    "wrap the model yourself.",
    kind=OPEN_WORK,
    option=_OPTION,
)
NO_DATALOADER = declare(
    "distributed_mode.no_dataloader",
    "distributed -m on a file without a DataLoader: the run stops (exit 2)",
    "The distributed mode shards a `torch.utils.data.DataLoader` of MAIN; a file without one is "
    "probably not the training entry point. The run stops with exit code 2 and writes nothing: "
    "name the script that builds the loaders with `-m`.",
    kind=NOTICE,
    opt_out="name another file with -m",
    option=_OPTION,
)


class DistributedMode(Concern):
    UNWRAPPED_TIP = "wrap the model in DistributedDataParallel yourself, or name it with -t"
    OWN_SAMPLER = "DataLoader with its own sampler: not sharded"
    OWN_SAMPLER_TIP = "shard it across ranks yourself (a DistributedSampler)"

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        t = self.tables.distributed_mode
        self.t = t
        self.targets = [n for n in (ctx.options.distributed_target or "").split(",") if n]
        self.dataloaders, self.data_parallel = t.dataloaders, t.data_parallel
        self.set_device, self.forwards = t.set_device, t.ddp_forwards
        # plans, keyed by id() of original nodes
        self.loader_calls: dict[int, str | None] = {}  # DataLoader call -> loader variable
        self.kwargs_loaders: dict[int, str] = {}  # DataLoader call -> its literal **dict
        self.block_inserts: dict[int, list[tuple[int, str, str, str]]] = {}
        self.module_inserts: list[tuple[int, str, str, str]] = []
        self.module_access: dict[int, str] = {}  # `model.<attr>` -> the -t name
        self.dp_calls: set[int] = set()
        self.dp_statements: set[int] = set()
        self.found_loader = False
        self.done = False
        self.unwrapped: list[str] = []  # -t models never assigned
        self.todo_calls: dict[int, str] = {}  # DataLoader / optimizer call -> its TODO comment

    # -- planning on the original tree ------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        # converted by an earlier run (idempotence), or distributed already: only migrated
        self.done = is_converted(node)
        found = [] if self.done else existing_setup(self.ctx, self.t, node)
        if found:
            report_existing(self.ctx, found)
        if self.done or found:
            self.done = self.found_loader = True
            return
        scopes: list[Scope] = [node]

        class Collect(cst.CSTVisitor):
            def visit_FunctionDef(self, n: cst.FunctionDef) -> None:
                scopes.append(n)

        node.visit(Collect())
        loaders_by_scope: dict[int, list[tuple[str, bool]]] = {}
        for scope in scopes:
            loaders_by_scope[id(scope)] = self._plan_loaders(scope)
        self._plan_epochs(scopes, loaders_by_scope)
        self._plan_model(node, scopes, loaders_by_scope)
        self._plan_entry(node)

    def _plan_loaders(self, scope: Scope) -> list[tuple[str, bool]]:
        """DataLoader calls directly in this scope; returns (variable, shuffles) per loader."""
        found = []
        stmts = (
            list(body_of(scope))
            if isinstance(scope, cst.FunctionDef)
            else [s for s in scope.body if not isinstance(s, (cst.FunctionDef, cst.ClassDef))]
        )
        for stmt in stmts:
            for call in calls_in(stmt):
                if (self.ctx.qname(call.func) or "") not in self.dataloaders:
                    continue
                self.found_loader = True
                if not self._shards(call, stmts):
                    continue
                variable = None
                if isinstance(stmt, cst.SimpleStatementLine) and isinstance(
                    stmt.body[0], cst.Assign
                ):
                    assign = stmt.body[0]
                    if assign.value is call and len(assign.targets) == 1:
                        variable = get_full_name_for_node(assign.targets[0].target)
                self.loader_calls[id(call)] = variable
                if variable:
                    found.append((variable, True))
        return found

    def _shards(self, call: cst.Call, stmts: list[cst.BaseStatement]) -> bool:
        """Whether a DataLoader call is a training loader to shard (else: evaluation, or open
        work when that cannot be told)."""
        keywords = {a.keyword.value: a for a in call.args if a.keyword}
        sampler = keywords.get("sampler")
        if "batch_sampler" in keywords or (
            sampler is not None and get_full_name_for_node(sampler.value) != "None"
        ):
            self._open_loader(call, self.OWN_SAMPLER, self.OWN_SAMPLER_TIP)
            return False
        positional = bool(call.args) and call.args[0].keyword is None and not call.args[0].star
        if not positional and "dataset" not in keywords:
            return False
        shuffle = keywords.get("shuffle")
        shuffles = shuffle is not None and get_full_name_for_node(shuffle.value) != "False"
        if shuffle is None and any(a.star == "**" for a in call.args):
            name = kwargs_name(call)
            given = resolve_kwargs(stmts, name) if name else None
            if given is not None and given.keys & {"sampler", "batch_sampler"}:
                self._open_loader(call, self.OWN_SAMPLER, self.OWN_SAMPLER_TIP)
                return False
            if given is None or "dataset" in given.keys:
                self._open_loader(
                    call,
                    "DataLoader configured through **kwargs: whether it shuffles is unknown, "
                    "so it is not sharded",
                    "pass shuffle= explicitly, or add a DistributedSampler yourself",
                )
                return False
            shuffles = given.shuffles
            if shuffles:
                self.kwargs_loaders[id(call)] = given.name
        if not shuffles:
            self.ctx.warn(
                call,
                SAMPLER,
                "DataLoader without shuffle is "
                "taken as evaluation: not sharded, every rank reads all of it",
                severity=Severity.INFO,
            )
        return shuffles

    def _plan_epochs(self, scopes, loaders_by_scope) -> None:
        for scope in scopes:
            loaders = [v for v, shuffles in loaders_by_scope[id(scope)] if shuffles]
            if loaders:
                for stmt in body_of(scope):
                    self._plan_epoch_loop(stmt, loaders)

    def _plan_epoch_loop(self, stmt: cst.CSTNode, loaders: list[str]) -> None:
        """`for epoch in ...` loops (searched through nested blocks, not nested functions)."""
        if (
            isinstance(stmt, cst.For)
            and isinstance(stmt.target, cst.Name)
            and "epoch" in stmt.target.value
            and isinstance(stmt.body, cst.IndentedBlock)
        ):
            anchor = self.ctx.lines(stmt.iter)[1] + 1
            for loader in loaders:
                code = f"{loader}.sampler.set_epoch({stmt.target.value})"
                self.block_inserts.setdefault(id(stmt.body), []).append(
                    (
                        anchor,
                        code,
                        SET_EPOCH,
                        "each epoch reshuffles the distributed shards",
                    )
                )
            return
        for child in getattr(getattr(stmt, "body", None), "body", ()) or ():
            if not isinstance(child, (cst.FunctionDef, cst.ClassDef)):
                self._plan_epoch_loop(child, loaders)

    def _plan_model(self, module: cst.Module, scopes, loaders_by_scope) -> None:
        self._plan_data_parallel(module, scopes)

        def trains(scope: Scope, body) -> bool:
            return bool(loaders_by_scope[id(scope)]) or any(
                id(getattr(s, "body", None)) in self.block_inserts for s in body
            )

        wraps = ModelWraps(self.ctx, self.t, scopes, trains)
        for target in self.targets:
            wrap = wraps.plan(target)
            if wrap is None:
                self.unwrapped.append(target)
                entry = Entry(f"-t {target}", CATEGORY, "manual", self.UNWRAPPED_TIP)
                message = (
                    f"-t {target}: never assigned in this file; the model is not wrapped in "
                    "DistributedDataParallel"
                )
                self.ctx.unsupported_at((1, 1), entry.key, entry, message, UNWRAPPED_MODEL)
                continue
            code = f"{target} = {self.t.ddp}({target}.npu(), device_ids=[msft_local_rank()])"
            entry = (wrap.anchor, code, DDP, f"-t {target} wrapped in DistributedDataParallel")
            if isinstance(wrap.scope, cst.FunctionDef):
                self.block_inserts.setdefault(id(wrap.scope.body), []).append(entry)
            else:
                self.module_inserts.append(entry)
            self.module_access.update(dict.fromkeys(wrap.access, target))
        trained = trained_modules(self.ctx, self.t, module)
        report_untargeted(self.ctx, trained, self.targets, self.todo_calls)

    def _plan_data_parallel(self, module: cst.Module, scopes) -> None:
        """DataParallel wrappers in the whole file are removed."""
        calls = calls_in(module) + [c for s in scopes[1:] for c in calls_in(s.body)]
        for call in calls:
            if (self.ctx.qname(call.func) or "") in self.data_parallel and call.args:
                self.dp_calls.add(id(call))
                cur = call.func  # removed here: not open work for the unsupported report
                while isinstance(cur, (cst.Attribute, cst.Name)):
                    self.ctx.claim(cur)
                    cur = cur.value if isinstance(cur, cst.Attribute) else None

    def _open_loader(self, call: cst.Call, message: str, tip: str) -> None:
        """A training loader left unsharded: an open-work row and a TODO on its line."""
        entry = Entry("DataLoader", CATEGORY, "manual", tip)
        self.ctx.unsupported(call, "torch.utils.data.DataLoader", entry, message, UNSHARDED_LOADER)
        if self.ctx.options.todo_comments:
            self.todo_calls[id(call)] = todo_text(UNSHARDED_LOADER, tip)

    def _plan_entry(self, module: cst.Module) -> None:
        call = self.t.init_call
        if self.unwrapped and self.ctx.options.todo_comments:
            call += "  " + todo_text(UNWRAPPED_MODEL, self.UNWRAPPED_TIP)
        init = (call, INIT, "join the hccl process group first")
        for stmt in module.body:
            if (
                isinstance(stmt, cst.If)
                and _is_main_guard(stmt.test)
                and isinstance(stmt.body, cst.IndentedBlock)
            ):
                anchor = self.ctx.lines(stmt.test)[1] + 1
                self.block_inserts.setdefault(id(stmt.body), []).insert(0, (anchor, *init))
                return
        for i, stmt in enumerate(module.body):
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) or _is_import_or_doc(stmt, i):
                continue
            code, rule, message = init
            # anchored where the blank lines/comments above that statement begin
            anchor = self.ctx.lines(module.body[i - 1])[1] + 1 if i else self.ctx.lines(stmt)[0]
            self.module_inserts.insert(0, (anchor, "\n\n" + code, rule, message))
            return

    # -- rewriting ----------------------------------------------------------------------------
    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if id(original) in self.loader_calls:
            return self._shard(original, updated)
        if id(original) in self.dp_calls:
            inner = updated.args[0].value
            self.ctx.record(
                original,
                DATA_PARALLEL,
                "DataParallel removed: DistributedDataParallel wraps the model",
                self.ctx.snippet(updated),
                self.ctx.snippet(inner),
            )
            return inner
        qn = self.ctx.qname(original.func) or ""
        if self.done:
            return updated
        if qn in self.set_device and updated.args:
            new = updated.with_changes(args=[cst.Arg(cst.parse_expression("msft_local_rank()"))])
            if self.ctx.code(new) != self.ctx.code(updated):
                self.ctx.record(
                    original,
                    DEVICE,
                    "each process binds its own NPU",
                    self.ctx.snippet(updated),
                    self.ctx.snippet(new),
                )
            return new
        func = updated.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in ("cuda", "npu")
            and any(a.keyword is None or a.keyword.value == "device" for a in updated.args)
        ):
            args = [
                a for a in updated.args if not (a.keyword is None or a.keyword.value == "device")
            ]
            if args:
                args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            new = updated.with_changes(args=args)
            self.ctx.record(
                original,
                DEVICE,
                "the process's own NPU (current device), not a fixed index",
                self.ctx.snippet(updated),
                self.ctx.snippet(new),
            )
            return new
        return updated

    def leave_SimpleString(
        self, original: cst.SimpleString, updated: cst.SimpleString
    ) -> cst.SimpleString:
        """``torch.device("cuda:0")`` (now ``"npu:0"``): every rank would use NPU 0; ``"npu"``
        is the process's current NPU, which msft_init_distributed() binds to its local rank."""
        if self.done or id(original) in self.ctx.docstrings:
            return updated
        body = self.ctx.literal_body(updated)
        if body is None or _FIXED_NPU.fullmatch(body) is None:
            return updated
        new = self.ctx.with_literal_body(updated, "npu")
        message = "the process's own NPU (current device), not a fixed index"
        self.ctx.record(original, DEVICE, message, updated.value, new.value)
        return new

    def _shard(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        name = self.kwargs_loaders.get(id(original))
        if name is None:
            new = shard_call(updated, self.t.sampler)
            message = "DistributedSampler: each rank reads its own shard (shuffle moved into it)"
        else:
            new = shard_kwargs_call(updated, self.t.sampler, name)
            message = (
                f"DistributedSampler: each rank reads its own shard (shuffling as {name} says)"
            )
        self.ctx.record(
            original, SAMPLER, message, self.ctx.snippet(updated), self.ctx.snippet(new)
        )
        return new

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        target = self.module_access.get(id(original))
        if target is None:
            return updated
        new = updated.with_changes(
            value=cst.Attribute(value=updated.value, attr=cst.Name("module"))
        )
        self.ctx.record(
            original,
            MODULE_ACCESS,
            f"{target} is the DDP wrapper now: the model is {target}.module",
            self.ctx.snippet(updated),
            self.ctx.snippet(new),
        )
        return new

    def _with_todo(self, original, updated):
        todo = next(
            (self.todo_calls[id(c)] for c in calls_in(original) if id(c) in self.todo_calls),
            None,
        )
        return updated if todo is None else self.ctx.todo_comment(original, updated, todo)

    def leave_SimpleStatementLine(self, original, updated):
        updated = self._with_todo(original, updated)
        # `model = model` (`model.features = model.features`) left by a removed DataParallel
        # wrapper: the line becomes a pass
        if len(updated.body) == 1 and isinstance(updated.body[0], cst.Assign):
            assign = updated.body[0]
            if (
                len(assign.targets) == 1
                and isinstance(assign.value, (cst.Name, cst.Attribute))
                and get_full_name_for_node(assign.targets[0].target)
                == get_full_name_for_node(assign.value)
                and any(id(c) in self.dp_calls for c in calls_in(original))
            ):
                comment = cst.Comment(
                    "# DataParallel removed: DistributedDataParallel wraps "
                    "the model (ms_fmk_transplt distributed)"
                )
                return updated.with_changes(
                    body=[cst.Pass()],
                    trailing_whitespace=cst.TrailingWhitespace(
                        whitespace=cst.SimpleWhitespace("  "), comment=comment
                    ),
                )
        return updated

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock):
        plan = self.block_inserts.get(id(original))
        if not plan:
            return updated
        body = self._insert(list(updated.body), list(original.body), plan)
        return updated.with_changes(body=body)

    def _insert(self, body: list, originals: list, plan) -> list:
        """Insert each planned statement before the first original statement that ends at or
        after its anchor line; record them in file order."""
        ordered = sorted(plan, key=lambda p: p[0])  # stable: equal anchors keep plan order
        positions = [sum(1 for s in originals if self.ctx.lines(s)[1] < p[0]) for p in ordered]
        for offset, (position, entry) in enumerate(zip(positions, ordered)):
            code = entry[1]
            stmt = cst.parse_statement(code.lstrip("\n") + "\n")
            blanks = len(code) - len(code.lstrip("\n"))
            if blanks:
                stmt = stmt.with_changes(leading_lines=[cst.EmptyLine()] * blanks)
            body.insert(position + offset, stmt)
        for anchor, code, rule, message in ordered:
            self.ctx.record_insert(anchor, rule, message, code)
        return body

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        if self.done:
            return updated
        if not self.found_loader:
            self.ctx.warn(
                original,
                NO_DATALOADER,
                "no torch.utils.data.DataLoader in this file",
            )
        self.ctx.helper_lines.append(
            (
                self.t.helper,
                INIT,
                "distributed helpers (rank, world size, hccl process group)",
            )
        )
        if not self.module_inserts:
            return updated
        body = self._insert(list(updated.body), list(original.body), self.module_inserts)
        return updated.with_changes(body=body)


def _is_main_guard(test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    left, right = test.left, test.comparisons[0].comparator
    names = {
        get_full_name_for_node(left),
        getattr(right, "evaluated_value", None),
        getattr(left, "evaluated_value", None),
        get_full_name_for_node(right),
    }
    return "__name__" in names and "__main__" in names


def _is_import_or_doc(stmt: cst.BaseStatement, index: int) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    small = stmt.body[0]
    if isinstance(small, (cst.Import, cst.ImportFrom)):
        return True
    return index == 0 and isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString)
