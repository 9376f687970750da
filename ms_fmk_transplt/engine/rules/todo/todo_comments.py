"""Open work the structural options leave in the code: a ``# msft: TODO[<rule id>] ...`` comment at
the end of the line (rule todo.comment, on by default; ``--no-todo-comments`` turns it off), next
to the open-work row (category ``incomplete_migration``) that the emitting rule records. No LibCST
here: the reports import the rule id."""

from __future__ import annotations

from ms_fmk_transplt.rule_catalog import declare

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
)


def todo_text(rule: str, message: str) -> str:
    """The comment: ``# msft: TODO[distributed_mode.unsharded_loader]: <what to do>``."""
    return f"# msft: TODO[{rule}]: {message}"
