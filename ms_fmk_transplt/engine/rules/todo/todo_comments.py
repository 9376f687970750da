"""Open work the structural options leave in the code: a ``# msft: TODO[<rule id>] ...`` comment at
the end of the line (rule todo.comment, on by default; ``--no-todo-comments`` turns it off), next
to the open-work row (category ``incomplete_migration``) that the emitting rule records (only
LibCST stages write one)."""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.catalogue.rule_catalog import declare
from ms_fmk_transplt.engine.context import MigrationContext

CATEGORY = "incomplete_migration"
TODO_COMMENT = declare(
    "todo.comment",
    "a `# msft: TODO[<rule id>] ...` comment on a line the tool could not finish",
    "When a structural option (`distributed -m`) cannot complete a step on a line -- a training "
    "DataLoader it cannot shard, a `-t` model it cannot find -- the line gets a trailing comment "
    "naming the open-work rule and what to do, so the work is visible in the code and in review, "
    "not only in the report (where the same item is a `manual` row). The comment is recorded as a "
    "change but not counted in the conversion rate. Turn it off with `--no-todo-comments`.",
    opt_out="--no-todo-comments (the open-work rows stay)",
    bookkeeping=True,
)


def todo_text(rule: str, message: str) -> str:
    """The comment: ``# msft: TODO[distributed_mode.unsharded_loader]: <what to do>``."""
    return f"# msft: TODO[{rule}]: {message}"


def todo_comment(
    ctx: MigrationContext,
    original: cst.SimpleStatementLine,
    updated: cst.SimpleStatementLine,
    todo: str,
) -> cst.SimpleStatementLine:
    """``updated`` with ``# msft: TODO[...]`` at the end of its line (rule todo.comment;
    appended to a comment already there; never twice)."""
    if "msft: TODO[" in ctx.code(original):
        return updated
    trailing = updated.trailing_whitespace
    text = f"{trailing.comment.value}  {todo}" if trailing.comment else todo
    space = trailing.whitespace if trailing.comment else cst.SimpleWhitespace("  ")
    new = updated.with_changes(
        trailing_whitespace=trailing.with_changes(whitespace=space, comment=cst.Comment(text))
    )
    last = ctx.lines(original)[1]
    message = "open work noted in the code"
    ctx.record((last, last), TODO_COMMENT, message, "", todo, needs_torch_npu=False)
    return new
