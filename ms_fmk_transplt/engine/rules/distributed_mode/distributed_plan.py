"""What ``distributed -m MAIN -t MODEL`` changes in MAIN, decided on the tree its LibCST stage
reads (the span pass's output) before anything else is rewritten (distributed_rewrites.py, the
concern, applies the plan), and the rules ``distributed_mode.*`` it records.

The plan, keyed by ``id()`` of original nodes: the training DataLoader calls to shard and the
``for epoch`` loops that call ``set_epoch``; the DDP wrap of each ``-t`` model and the
``model.<attr>`` that go through ``model.module`` (model_wraps.py); the DataParallel
wrappers to remove; where ``msft_init_distributed()`` goes (first statement of the ``if __name__
== "__main__":`` block, else before the first statement that is not an import, definition or
docstring); the TODO comments of loaders and models left as they are. Open work (loaders it
cannot shard, a ``-t`` never assigned, trained modules ``-t`` does not name) is reported here.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
from libcst.helpers import get_full_name_for_node

import ms_fmk_transplt.engine.rules.distributed_mode.dataloader_sharding as sharding
from ms_fmk_transplt.catalogue.rule_catalog import NOTICE, OPEN_WORK, declare
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.rules.distributed_mode.existing_distributed import (
    existing_setup,
    is_converted,
    is_import_or_doc,
    is_main_guard,
    report_existing,
)
from ms_fmk_transplt.engine.rules.distributed_mode.model_wraps import (
    ModelWraps,
    Scope,
    body_of,
    calls_in,
)
from ms_fmk_transplt.engine.rules.distributed_mode.trained_modules import (
    report_untargeted,
    trained_modules,
)
from ms_fmk_transplt.engine.rules.todo.todo_comments import CATEGORY, todo_text
from ms_fmk_transplt.events import Severity
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
    option_edit=True,
)
SAMPLER = declare(
    "distributed_mode.sampler",
    "distributed -m: every training DataLoader gets a DistributedSampler",
    "A DataLoader that shuffles is a training loader: it gets "
    "`sampler=DistributedSampler(dataset, shuffle=...)` so that each rank reads its own shard "
    "(its `shuffle` moves into the sampler). A loader without shuffle is taken as evaluation and "
    "left whole (every rank reads all of it, so metrics stay global); so is a loader that "
    "shuffles only through a `**dict` (`test_kwargs.update(cuda_kwargs)`, one `**kwargs` shared "
    "with the training loader) and is named as evaluation (`test_loader`, `val_set`, ...); two "
    "loaders sharing such a dict, neither named so, are open work. Loaders with their own "
    "sampler, or a `**kwargs` the tool cannot read, are left with a WARNING.",
    option=_OPTION,
    option_edit=True,
)
SET_EPOCH = declare(
    "distributed_mode.set_epoch",
    "distributed -m: `loader.sampler.set_epoch(epoch)` at the top of each epoch loop",
    "A DistributedSampler shuffles with a seed derived from the epoch; without `set_epoch` every "
    "epoch reads the same order. `for epoch in ...` loops in the function that uses a sharded "
    "loader call it first.",
    option=_OPTION,
    option_edit=True,
)
DDP = declare(
    "distributed_mode.ddp",
    "distributed -m: the -t model wrapped in DistributedDataParallel",
    "The model named by `-t` (default `model`) is wrapped in `DistributedDataParallel` right "
    "after the last statement of the function that assigns it (so after `amp.initialize`), with "
    "the process's own NPU. A `-t` name that is never assigned gets a WARNING.",
    option=_OPTION,
    option_edit=True,
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
    option_edit=True,
)
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


# a statement to insert: (the input line it goes before, its code, rule, message)
Insert = tuple[int, str, str, str]
Loaders = list[tuple[str, bool]]  # (variable, shuffles) of the DataLoaders of one scope


class DistributedPlan:
    """The changes to MAIN, planned by ``make(module)`` on the original tree."""

    UNWRAPPED_TIP = "wrap the model in DistributedDataParallel yourself, or name it with -t"
    OWN_SAMPLER = "DataLoader with its own sampler: not sharded"
    OWN_SAMPLER_TIP = "shard it across ranks yourself (a DistributedSampler)"

    def __init__(self, ctx: MigrationContext) -> None:
        self.ctx = ctx
        self.t = t = ctx.tables.distributed_mode
        self.targets = [n for n in (ctx.options.distributed_target or "").split(",") if n]
        self.dataloaders, self.data_parallel = t.dataloaders, t.data_parallel
        self.loader_calls: dict[int, str | None] = {}  # DataLoader call -> loader variable
        self.kwargs_loaders: dict[int, str] = {}  # DataLoader call -> its literal **dict
        self.block_inserts: dict[int, list[Insert]] = {}  # IndentedBlock -> its inserts
        self.module_inserts: list[Insert] = []
        self.module_access: dict[int, str] = {}  # `model.<attr>` -> the -t name
        self.dp_calls: set[int] = set()
        self.found_loader = False
        self.done = False  # converted already, or distributed already: nothing to change
        self.unwrapped: list[str] = []  # -t models never assigned
        self.todo_calls: dict[int, str] = {}  # DataLoader / optimizer call -> its TODO comment

    def make(self, node: cst.Module) -> None:
        # converted by an earlier run (idempotence), or distributed already: only migrated
        self.done = is_converted(node)
        found = [] if self.done else existing_setup(self.ctx, self.t, node)
        if found:
            report_existing(self.ctx, found)
        if self.done or found:
            self.done = self.found_loader = True
            return
        functions: list[cst.FunctionDef] = []

        class Collect(cst.CSTVisitor):
            def visit_FunctionDef(self, n: cst.FunctionDef) -> None:
                functions.append(n)

        node.visit(Collect())
        scopes: list[Scope] = [node, *functions]
        loaders_by_scope: dict[int, Loaders] = {}
        for scope in scopes:
            loaders_by_scope[id(scope)] = self._plan_loaders(scope)
        self._plan_epochs(scopes, loaders_by_scope)
        self._plan_data_parallel(node, functions)
        self._plan_model(node, scopes, loaders_by_scope)
        self._plan_entry(node)

    def _plan_loaders(self, scope: Scope) -> Loaders:
        """DataLoader calls directly in this scope; returns (variable, shuffles) per loader."""
        found: Loaders = []
        stmts: list[cst.BaseStatement] = (
            list(body_of(scope))
            if isinstance(scope, cst.FunctionDef)
            else [s for s in scope.body if not isinstance(s, (cst.FunctionDef, cst.ClassDef))]
        )
        loaders = [
            (call, sharding.assigned_name(stmt, call))
            for stmt in stmts
            for call in calls_in(stmt)
            if (self.ctx.qname(call.func) or "") in self.dataloaders
        ]
        for call, variable in loaders:
            self.found_loader = True
            if not self._shards(call, stmts, (call, variable), loaders):
                continue
            self.loader_calls[id(call)] = variable
            if variable:
                found.append((variable, True))
        return found

    def _shards(
        self,
        call: cst.Call,
        stmts: list[cst.BaseStatement],
        loader: sharding.Loader,
        loaders: list[sharding.Loader],
    ) -> bool:
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
            name = sharding.kwargs_name(call)
            given = sharding.resolve_kwargs(stmts, name) if name else None
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
            shuffles = given.shuffles and self._kwargs_trains(loader, given.name, loaders)
            if shuffles:
                self.kwargs_loaders[id(call)] = given.name
            elif given.shuffles:
                return False
        if not shuffles:
            self.ctx.warn(
                self.ctx.lines(call),
                SAMPLER,
                "DataLoader without shuffle is "
                "taken as evaluation: not sharded, every rank reads all of it",
                severity=Severity.INFO,
            )
        return shuffles

    def _plan_epochs(self, scopes: list[Scope], loaders_by_scope: dict[int, Loaders]) -> None:
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

    def _plan_model(
        self, module: cst.Module, scopes: list[Scope], loaders_by_scope: dict[int, Loaders]
    ) -> None:
        def trains(scope: Scope, body: Sequence[cst.BaseStatement]) -> bool:
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
                self.ctx.unsupported((1, 1), entry.key, entry, message, UNWRAPPED_MODEL)
                continue
            code = f"{target} = {self.t.ddp}({target}.npu(), device_ids=[msft_local_rank()])"
            insert = (wrap.anchor, code, DDP, f"-t {target} wrapped in DistributedDataParallel")
            if isinstance(wrap.scope, cst.FunctionDef):
                self.block_inserts.setdefault(id(wrap.scope.body), []).append(insert)
            else:
                self.module_inserts.append(insert)
            self.module_access.update(dict.fromkeys(wrap.access, target))
        trained = trained_modules(self.ctx, self.t, module)
        report_untargeted(self.ctx, trained, self.targets, self.todo_calls)

    def _plan_data_parallel(self, module: cst.Module, functions: list[cst.FunctionDef]) -> None:
        """DataParallel wrappers in the whole file are removed."""
        calls = calls_in(module) + [c for f in functions for c in calls_in(f.body)]
        for call in calls:
            if (self.ctx.qname(call.func) or "") in self.data_parallel and call.args:
                self.dp_calls.add(id(call))
                cur: cst.BaseExpression | None = call.func
                while isinstance(cur, (cst.Attribute, cst.Name)):  # removed: not open work
                    self.ctx.claim(cur)
                    cur = cur.value if isinstance(cur, cst.Attribute) else None

    def _kwargs_trains(
        self, loader: sharding.Loader, name: str, loaders: list[sharding.Loader]
    ) -> bool:
        """A loader shuffling through ``**name``: sharded unless it is told as evaluation (a
        notice) or cannot be told from the other loaders sharing ``name`` (open work)."""
        role = sharding.kwargs_role(loader, name, loaders)
        if role == sharding.EVALUATION:
            message = sharding.evaluation_message(loader, name)
            self.ctx.warn(self.ctx.lines(loader[0]), SAMPLER, message, severity=Severity.INFO)
        elif role == sharding.UNKNOWN:
            self._open_loader(loader[0], sharding.shared_message(name), sharding.SHARED_TIP)
        return role == sharding.TRAIN

    def _open_loader(self, call: cst.Call, message: str, tip: str) -> None:
        """A training loader left unsharded: an open-work row and a TODO on its line."""
        entry = Entry("DataLoader", CATEGORY, "manual", tip)
        self.ctx.unsupported(
            self.ctx.lines(call), "torch.utils.data.DataLoader", entry, message, UNSHARDED_LOADER
        )
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
                and is_main_guard(stmt.test)
                and isinstance(stmt.body, cst.IndentedBlock)
            ):
                anchor = self.ctx.lines(stmt.test)[1] + 1
                self.block_inserts.setdefault(id(stmt.body), []).insert(0, (anchor, *init))
                return
        for i, stmt in enumerate(module.body):
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) or is_import_or_doc(stmt, i):
                continue
            code, rule, message = init
            # anchored where the blank lines/comments above that statement begin
            anchor = self.ctx.lines(module.body[i - 1])[1] + 1 if i else self.ctx.lines(stmt)[0]
            self.module_inserts.insert(0, (anchor, "\n\n" + code, rule, message))
            return
