"""``distributed -m`` on a script that already sets up distributed training itself (its own
``init_process_group``, ``mp.spawn``, DistributedDataParallel or DistributedSampler): nothing
is inserted or rebound, the normal rules migrate it (``nccl`` -> ``hccl``, devices), and one
caveat row plus a WARNING say so (rule distributed_mode.already_distributed)."""

from __future__ import annotations

import libcst as cst
from libcst.helpers import get_full_name_for_node

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.base import literal_value
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.rules.todo.todo_comments import CATEGORY
from ms_fmk_transplt.tables.table_sections import DistributedModeTable
from ms_fmk_transplt.tables.unsupported_table import Entry

ALREADY_DISTRIBUTED = declare(
    "distributed_mode.already_distributed",
    "distributed -m on a script that is already distributed: only migrated, one caveat row",
    "A MAIN that calls `init_process_group`, `torch.multiprocessing.spawn`, "
    "`DistributedDataParallel`, `DistributedSampler` (or `deepspeed.initialize`, "
    "`accelerate.Accelerator`) sets up its own process group, data sharding and model wrap. "
    "Adding ours would wrap its DDP in a second DDP, rebind `set_device(args.gpu)` to another "
    "rank and drop the index of `.cuda(args.gpu)`. So nothing is inserted or rebound: the normal "
    "rules migrate the file (`nccl` -> `hccl`, `cuda` devices -> `npu`), and one caveat row (and "
    "a WARNING on the terminal) names the calls found. Launch the script as before (its own "
    "`mp.spawn`, or torchrun); `run_distributed_npu.sh` suits scripts that read "
    "`RANK`/`WORLD_SIZE`/`LOCAL_RANK` from the environment.",
    kind=OPEN_WORK,
    option="distributed -m MAIN -t MODEL",
)
TIP = (
    "the script sets up distributed training itself: distributed -m only migrated it (nccl -> "
    "hccl, devices); launch it as before and check its device binding on the NPU"
)


def is_converted(module: cst.Module) -> bool:
    """Whether an earlier ``distributed -m`` run converted this file (its helpers are there)."""
    return any(
        isinstance(s, cst.FunctionDef) and s.name.value == "msft_init_distributed"
        for s in module.body
    )


def existing_setup(
    ctx: MigrationContext, table: DistributedModeTable, module: cst.Module
) -> list[tuple[str, cst.Call]]:
    """The calls of the file that set up distributed training (qualified name, call)."""
    found: list[tuple[str, cst.Call]] = []
    wanted = table.existing_setup

    class Collect(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            name = ctx.qname(node.func) or ""
            if name in wanted:
                found.append((name, node))

    module.visit(Collect())
    return found


def report_existing(ctx: MigrationContext, found: list[tuple[str, cst.Call]]) -> None:
    """One caveat row at the first call found, naming every kind of call and its first line."""
    first_lines: dict[str, int] = {}
    for name, call in found:
        first_lines.setdefault(name.rsplit(".", 1)[-1], ctx.lines(call)[0])
    calls = ", ".join(f"{name} (line {line})" for name, line in first_lines.items())
    message = (
        f"already distributed: {calls}; distributed -m inserted nothing (no second process "
        "group, sampler or DDP wrap) and only migrated the file"
    )
    entry = Entry("already distributed", CATEGORY, "caveat", TIP)
    ctx.unsupported(ctx.lines(found[0][1]), entry.key, entry, message, ALREADY_DISTRIBUTED)


def is_main_guard(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    left, right = test.left, test.comparisons[0].comparator
    names = {
        get_full_name_for_node(left),
        _string_value(right),
        _string_value(left),
        get_full_name_for_node(right),
    }
    return "__name__" in names and "__main__" in names


def _string_value(node: cst.BaseExpression) -> object:
    """The value of a string literal, implicit concatenations too; None for anything else or a
    literal Python cannot evaluate (exotic escapes, an f-string part)."""
    if isinstance(node, cst.ConcatenatedString):
        try:
            return node.evaluated_value
        except Exception:  # noqa: BLE001 - as literal_value
            return None
    return literal_value(node)


def is_import_or_doc(stmt: cst.BaseStatement, index: int) -> bool:
    """An import, or the module docstring (the first statement)."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    small = stmt.body[0]
    if isinstance(small, (cst.Import, cst.ImportFrom)):
        return True
    return index == 0 and isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString)
