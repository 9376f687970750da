"""``distributed -m MAIN -t MODEL``: a single-card training script becomes data-parallel over
several NPUs (rules distributed_mode.*; data: the distributed_mode section of the table).

Applied to the -m file only, after the normal migration rules:

* ``msft_local_rank()`` / ``msft_init_distributed()`` helpers after ``import torch_npu``; the
  init call is the first statement of the ``if __name__ == "__main__":`` block (the entry point,
  never module import), or, in a script without that guard, right before its first statement
  that is not an import, definition or docstring. Rank, world size and local rank come from
  RANK/WORLD_SIZE/LOCAL_RANK (torchrun, run_distributed_npu.sh) or RANK_ID/RANK_SIZE/DEVICE_ID.
* every training DataLoader (one that shuffles) gets ``sampler=DistributedSampler(dataset,
  shuffle=...)`` (its ``shuffle`` moves into the sampler; dataloader_sharding.py, also for a
  ``**kwargs`` dict that is a literal of the function); a loader without shuffle is taken as
  evaluation and left whole (every rank reads all of it, so metrics stay global); loaders with
  their own sampler or batch_sampler are left, with a warning; ``for epoch in ...`` loops in the
  same function call ``loader.sampler.set_epoch``.
* each -t model (several: ``-t a,b``) is wrapped in DistributedDataParallel in the function that
  assigns it, after its last in-place initialisation (model_wraps.py);
  ``nn.DataParallel(model)`` is removed; after the wrap, ``model.<attr>`` that DDP does not
  forward (``state_dict``, ``load_state_dict``, custom attributes) goes through ``model.module``,
  also in functions taking ``model``; modules an optimizer trains that -t does not name are open
  work (trained_modules.py).
* ``set_device(...)`` binds to ``msft_local_rank()``; ``.cuda(i)``/``.npu(i)`` drop the index so
  every process uses its own current NPU.

A file already distributed (its own process group, spawn, DDP or DistributedSampler) is only
migrated (existing_distributed.py). Saves and per-step prints are guarded by a separate concern
(rank_zero_guards.py).

The plan is made on the tree of the span pass's output (distributed_plan.py, which declares the
rules); this concern applies it while the LibCST stage rewrites the tree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst
from libcst.helpers import get_full_name_for_node

from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.rules.distributed_mode.dataloader_sharding import (
    shard_call,
    shard_kwargs_call,
)
from ms_fmk_transplt.engine.rules.distributed_mode.distributed_plan import (
    DATA_PARALLEL,
    DEVICE,
    INIT,
    MODULE_ACCESS,
    NO_DATALOADER,
    SAMPLER,
    DistributedPlan,
    Insert,
)
from ms_fmk_transplt.engine.rules.distributed_mode.model_wraps import calls_in
from ms_fmk_transplt.engine.rules.todo.todo_comments import todo_comment

_FIXED_NPU = re.compile(r"npu:\d+")  # a device string with a fixed index, once migrated


class DistributedMode(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        self.t = self.tables.distributed_mode
        self.set_device = self.t.set_device
        self.plan = DistributedPlan(ctx)

    def visit_Module(self, node: cst.Module) -> None:
        self.plan.make(node)

    # -- rewriting ----------------------------------------------------------------------------
    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if id(original) in self.plan.loader_calls:
            return self._shard(original, updated)
        if id(original) in self.plan.dp_calls:
            inner = updated.args[0].value
            self.ctx.record(
                self.ctx.lines(original),
                DATA_PARALLEL,
                "DataParallel removed: DistributedDataParallel wraps the model",
                self.ctx.snippet(updated),
                self.ctx.snippet(inner),
            )
            return inner
        qn = self.ctx.qname(original.func) or ""
        if self.plan.done:
            return updated
        if qn in self.set_device and updated.args:
            new = updated.with_changes(args=[cst.Arg(cst.parse_expression("msft_local_rank()"))])
            if self.ctx.code(new) != self.ctx.code(updated):
                self.ctx.record(
                    self.ctx.lines(original),
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
                self.ctx.lines(original),
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
        if self.plan.done or id(original) in self.ctx.docstrings:
            return updated
        body = self.ctx.literal_body(updated)
        if body is None or _FIXED_NPU.fullmatch(body) is None:
            return updated
        new = self.ctx.with_literal_body(updated, "npu")
        message = "the process's own NPU (current device), not a fixed index"
        self.ctx.record(self.ctx.lines(original), DEVICE, message, updated.value, new.value)
        return new

    def _shard(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        name = self.plan.kwargs_loaders.get(id(original))
        if name is None:
            new = shard_call(updated, self.t.sampler)
            message = "DistributedSampler: each rank reads its own shard (shuffle moved into it)"
        else:
            new = shard_kwargs_call(updated, self.t.sampler, name)
            message = (
                f"DistributedSampler: each rank reads its own shard (shuffling as {name} says)"
            )
        self.ctx.record(
            self.ctx.lines(original),
            SAMPLER,
            message,
            self.ctx.snippet(updated),
            self.ctx.snippet(new),
        )
        return new

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        target = self.plan.module_access.get(id(original))
        if target is None:
            return updated
        new = updated.with_changes(
            value=cst.Attribute(value=updated.value, attr=cst.Name("module"))
        )
        self.ctx.record(
            self.ctx.lines(original),
            MODULE_ACCESS,
            f"{target} is the DDP wrapper now: the model is {target}.module",
            self.ctx.snippet(updated),
            self.ctx.snippet(new),
        )
        return new

    def _with_todo(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        todos = self.plan.todo_calls
        todo = next((todos[id(c)] for c in calls_in(original) if id(c) in todos), None)
        return updated if todo is None else todo_comment(self.ctx, original, updated, todo)

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
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
                and any(id(c) in self.plan.dp_calls for c in calls_in(original))
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

    def leave_IndentedBlock(
        self, original: cst.IndentedBlock, updated: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        plan = self.plan.block_inserts.get(id(original))
        if not plan:
            return updated
        body = self._insert(list(updated.body), original.body, plan)
        return updated.with_changes(body=body)

    def _insert(
        self,
        body: list[cst.BaseStatement],
        originals: Sequence[cst.BaseStatement],
        plan: list[Insert],
    ) -> list[cst.BaseStatement]:
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
        if self.plan.done:
            return updated
        if not self.plan.found_loader:
            self.ctx.warn(
                self.ctx.lines(original),
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
        if not self.plan.module_inserts:
            return updated
        body = self._insert(list(updated.body), original.body, self.plan.module_inserts)
        return updated.with_changes(body=body)
