"""What shell completion offers for option values: the torch_npu versions ``-v`` knows, the
rule ids (and id prefixes) of ``--select``, ``--ignore`` and ``rule``, and the shell's own file
or folder names for the options that take a path (``ShellPath``). Reads the rule pages and
the version tables' names only: completing a word loads neither LibCST nor the reports."""

from __future__ import annotations

from typing import Any

import click
from click.shell_completion import CompletionItem

from ms_fmk_transplt.catalogue.rule_pages import known_ids, summary


class ShellPath(click.Path):
    """The type of an option taking a path: the shell completes it with file names (``folders``:
    folder names only), and the value is taken as written: what is wrong with it (missing, a
    file for a folder, unreadable) is said later by the tool, in its own one line."""

    def __init__(self, folders: bool = False) -> None:
        super().__init__(exists=False, file_okay=not folders, dir_okay=True, readable=False)
        self.folders = folders

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return value

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        return [CompletionItem(incomplete, type="dir" if self.folders else "file")]


def complete_versions(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    from ms_fmk_transplt.tables import known_versions

    return [CompletionItem(v) for v in known_versions() if v.startswith(incomplete)]


def complete_rule_id(
    ctx: click.Context, param: click.Parameter | None, incomplete: str
) -> list[CompletionItem]:
    """One rule id (``rule ID``, ``--explain ID``), with its summary as help."""
    return [CompletionItem(i, help=summary(i)) for i in known_ids() if i.startswith(incomplete)]


def complete_rule_ids(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """``--select/--ignore``: rule ids and family prefixes; after a comma, the next one."""
    done, _, last = incomplete.rpartition(",")
    lead = f"{done}," if done else ""
    families = sorted({i.split(".")[0] for i in known_ids()})
    return [
        CompletionItem(lead + i, help=summary(i) or None)
        for i in (*families, *known_ids())
        if i.startswith(last)
    ]
