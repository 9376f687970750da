"""Shell completion (click's ``_MS_FMK_TRANSPLT_COMPLETE=bash_source|zsh_source|fish_source``):
the words the shell asks about are completed against the command the launcher would run for
them: the path modes' command when one of ``--check/--diff/--inplace/--fix`` is there, otherwise
the migration command with its ``distributed`` sub-command, plus ``rule ID`` (and ``--explain
ID``) and ``kit KIND`` as the first word. Values: ``-v`` versions and rule ids
(``shell_values.py``)."""

from __future__ import annotations

import os
import sys

import click
from click.core import ParameterSource
from click.shell_completion import split_arg_string

from ms_fmk_transplt.user_options.shell_values import complete_rule_id

PROG = "ms_fmk_transplt"
VARIABLE = "_MS_FMK_TRANSPLT_COMPLETE"
PATH_MODES = ("--check", "--diff", "--inplace", "--fix")


class _Root(click.Group):
    """The migration command's options and ``distributed``; ``kit`` and ``rule`` only as the
    first word."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        given = any(
            ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE for name in ctx.params
        )
        return ["distributed"] if given else ["distributed", "kit", "rule"]


def _root() -> click.Command:
    words = split_arg_string(os.environ.get("COMP_WORDS", ""))[1:]
    if any(word in PATH_MODES for word in words):
        from ms_fmk_transplt.commands.paths_cli import paths_main

        return paths_main
    from ms_fmk_transplt.commands.cli import distributed, main
    from ms_fmk_transplt.commands.kit_cli import kit

    rule = click.Command(
        "rule",
        params=[click.Argument(["rule_id"], required=False, shell_complete=complete_rule_id)],
        help="Print a rule's page (every rule without an ID).",
    )
    modes = [click.Option([m], is_flag=True) for m in PATH_MODES]
    explain = click.Option(["--explain"], metavar="ID", shell_complete=complete_rule_id)
    return _Root(
        PROG,
        commands={"distributed": distributed, "kit": kit, "rule": rule},
        params=[*main.params, *modes, explain],
        invoke_without_command=True,
    )


def complete() -> None:
    """Answers the shell (or prints the script for it) and exits."""
    sys.exit(_root().main([], prog_name=PROG, complete_var=VARIABLE))
