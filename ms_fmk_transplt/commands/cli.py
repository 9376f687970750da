"""Command line: ``ms_fmk_transplt -i INPUT -o OUTPUT [options]``.

Built as a click group so the original tool's trailing ``distributed -m MAIN -t MODEL`` part can
be added as a sub-command; without one, the group itself runs the migration.
"""

from __future__ import annotations

from typing import Any

import click

from ms_fmk_transplt import __version__
from ms_fmk_transplt.commands.config_file import configured
from ms_fmk_transplt.commands.help_format import CONTEXT, Command, Group
from ms_fmk_transplt.errors import fail
from ms_fmk_transplt.user_options.option_schema import DISTRIBUTED, RUN, options_of

EPILOG = (
    "Everyday use on files (no -i/-o): ms_fmk_transplt --check|--diff|--inplace [PATHS]... "
    "(see ms_fmk_transplt --check -h).\n\n"
    "kit and rule come first on the command line (ms_fmk_transplt kit -h; ms_fmk_transplt rule "
    "[ID], also --explain ID), distributed comes last (ms_fmk_transplt distributed -h).\n\n"
    "Exit codes: 0 success; 1 finished, but some files could not be processed (copied "
    "unchanged, listed in the log); 2 bad command line, input or output (nothing written); 3 "
    "internal error (nothing written; <name>_msft.interrupted.log has the traceback); 130 "
    "interrupted (Ctrl-C or SIGTERM: the partial output is removed; "
    "<name>_msft.interrupted.log says how far it got)."
)
# the Commands of --help: kit and rule are taken by the launcher (launch.py) as the first word
COMMANDS = {
    "distributed": "Make MAIN data-parallel over several NPUs (last on the line).",
    "kit": "Write the aoe, profile, precision or assess kit of a project.",
    "rule": "Print the page of a rule id (every rule without an ID).",
}


class _Main(Group):
    """The run's group: its help lists the three commands."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl(list(COMMANDS.items()))


@click.group(
    cls=_Main,
    context_settings=CONTEXT,
    invoke_without_command=True,
    no_args_is_help=True,
    epilog=EPILOG,
)
@options_of(RUN)
@click.version_option(__version__, "-V", "--version", prog_name="ms_fmk_transplt")
@click.pass_context
@configured(RUN, lambda params: str(params["input_path"]))
def main(ctx: click.Context, **values: Any) -> None:
    """Migrate CUDA PyTorch training code to Ascend NPUs (torch_npu).

    Writes a migrated copy of INPUT to OUTPUT/<name>_msft with change_list.csv,
    unsupported_op.xlsx/.csv (what is left to do on the NPU) and msFmkTranspltlog.txt at its root.
    The input is never modified.
    """
    from ms_fmk_transplt.commands import run_cli
    from ms_fmk_transplt.commands.run_options import run_options

    ctx.obj = run_options(values, config_file=ctx.meta.get("config_file", ""))
    output_format = values["output_format"]
    quiet, verbose, color = values["quiet"], values["verbose"], values["color"]
    ctx.meta.update(
        values=values,
        quiet=quiet,
        verbose=verbose,
        machine_format=output_format if output_format != "text" else "",
        color=color,
    )
    if values["library"]:  # the input as a library: a report of the analysis
        if not values["analyse"]:
            fail("--library requires --analyse")
        if values["zoo"] or ctx.invoked_subcommand is not None:
            fail(f"--library cannot be combined with {'--zoo' if values['zoo'] else 'distributed'}")
    if values["zoo"]:
        if ctx.invoked_subcommand is not None:
            fail("--zoo cannot be combined with distributed")
        run_cli.execute_zoo(ctx.obj, quiet, verbose, color)
        return
    if ctx.invoked_subcommand is None:
        run_cli.execute(ctx.obj, quiet, verbose, ctx.meta["machine_format"], color)


@main.command(cls=Command, context_settings=CONTEXT, short_help=COMMANDS["distributed"])
@options_of(DISTRIBUTED)
@click.pass_context
def distributed(ctx: click.Context, /, **values: Any) -> None:
    """Turn a single-card training script into a data-parallel multi-NPU one.

    MAIN gets an hccl process group, a DistributedSampler for its training DataLoaders and
    DistributedDataParallel around each MODEL; saves and per-step prints run on rank 0 only;
    run_distributed_npu.sh (at the root of the output) launches it. A script that already sets
    up distributed training is only migrated. Must come last on the command line, as in the
    original tool.
    """
    from ms_fmk_transplt.commands import run_cli
    from ms_fmk_transplt.commands.run_options import run_options

    given = ctx.meta.get("values", {})
    options = run_options({**given, **values}, config_file=ctx.meta.get("config_file", ""))
    run_cli.execute(
        options,
        ctx.meta.get("quiet", False),
        ctx.meta.get("verbose", False),
        ctx.meta.get("machine_format", ""),
        ctx.meta.get("color", "auto"),
    )
