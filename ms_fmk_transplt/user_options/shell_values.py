"""What shell completion offers for option values: the torch_npu versions ``-v`` knows and the
rule ids (and id prefixes) of ``--select``, ``--ignore`` and ``rule``. Reads the rule pages and
the version tables' names only: completing a word loads neither LibCST nor the reports."""

from __future__ import annotations

import click
from click.shell_completion import CompletionItem

from ms_fmk_transplt.catalogue.rule_pages import known_ids, summary


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
