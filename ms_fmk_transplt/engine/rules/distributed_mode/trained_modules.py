"""Modules an optimizer trains that ``-t`` does not name (``distributed -m``, rule
distributed_mode.untargeted_model): ``optim.Adam(netG.parameters())`` with only ``-t netD``
leaves netG unwrapped, so each rank trains its own netG and the replicas drift apart. Each such
module is an open-work row and the optimizer's line gets a ``# msft: TODO`` naming the ``-t``
to add."""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.rules.todo.todo_comments import CATEGORY, todo_text
from ms_fmk_transplt.tables.table_sections import DistributedModeTable
from ms_fmk_transplt.tables.unsupported_table import Entry

UNTARGETED_MODEL = declare(
    "distributed_mode.untargeted_model",
    "distributed -m: a module trained by an optimizer but not named by -t: not wrapped, manual row",
    "Only the models named by `-t` are wrapped in DistributedDataParallel. A module whose "
    "`.parameters()` an optimizer of MAIN takes (`optim.Adam(netG.parameters())`, a torch.optim, "
    "torch_npu.optim or apex optimizer) but that `-t` does not name trains separately on each "
    "rank: its replicas drift apart. Each such module is an open-work row (category "
    "`incomplete_migration`) and the optimizer's line gets a "
    "`# msft: TODO[distributed_mode.untargeted_model]` comment: name every trained model with "
    "`-t` (`-t netD -t netG`, or `-t netD,netG`), or wrap it yourself.",
    kind=OPEN_WORK,
    option="distributed -m MAIN -t MODEL",
)
_PARAMETERS = ("parameters", "named_parameters")


def trained_modules(
    ctx: MigrationContext, table: DistributedModeTable, module: cst.Module
) -> dict[str, cst.Call]:
    """Each name whose parameters an optimizer of the file takes -> its first optimizer call."""
    found: dict[str, cst.Call] = {}

    def is_optimizer(call: cst.Call) -> bool:
        name = ctx.qname(call.func) or ""
        return name.startswith(tuple(table.optimizer_prefixes)) and not name.startswith(
            tuple(table.not_optimizer_prefixes)
        )

    class Parameters(cst.CSTVisitor):
        def __init__(self, optimizer: cst.Call) -> None:
            self.optimizer = optimizer

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value in _PARAMETERS
                and isinstance(func.value, cst.Name)
            ):
                found.setdefault(func.value.value, self.optimizer)

    class Optimizers(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if is_optimizer(node):
                for arg in node.args:
                    arg.visit(Parameters(node))

    module.visit(Optimizers())
    return found


def report_untargeted(
    ctx: MigrationContext,
    trained: dict[str, cst.Call],
    targets: list[str],
    todo_calls: dict[int, str],
) -> None:
    """A row per trained module -t does not name; a TODO on its optimizer's line."""
    for name, call in trained.items():
        if name in targets:
            continue
        tip = f"add -t {name} (-t may be repeated, or -t {','.join([*targets, name])})"
        message = (
            f"{name} is trained by an optimizer but not named by -t: it is not wrapped in "
            "DistributedDataParallel, so each rank trains its own copy"
        )
        entry = Entry(f"-t {name}", CATEGORY, "manual", tip)
        ctx.unsupported(ctx.lines(call), entry.key, entry, message, UNTARGETED_MODEL)
        if ctx.options.todo_comments:
            previous = todo_calls.get(id(call))
            text = todo_text(UNTARGETED_MODEL, tip)
            todo_calls[id(call)] = f"{previous}; {text}" if previous else text
