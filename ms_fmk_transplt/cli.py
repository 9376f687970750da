"""Command line: ``ms_fmk_transplt -i INPUT -o OUTPUT [options]``.

Built as a click group so the original tool's trailing ``distributed -m MAIN -t MODEL`` part can
be added as a sub-command; without one, the group itself runs the migration.
"""

from __future__ import annotations

import dataclasses
import keyword

import click

from ms_fmk_transplt import __version__
from ms_fmk_transplt.config_file import (
    MAX_FILE_MIB,
    MAX_FILE_SECONDS,
    MAX_JOBS,
    Bounded,
    configured,
)
from ms_fmk_transplt.errors import fail
from ms_fmk_transplt.shell_values import complete_rule_ids, complete_versions
from ms_fmk_transplt.terminal import COLOR_OPTION

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

EPILOG = """\b
Everyday use on files (no -i/-o): ms_fmk_transplt --check|--diff|--inplace [PATHS]...
(see ms_fmk_transplt --check -h).
\b
Rule pages: ms_fmk_transplt rule [ID] (every rule without an ID; also --explain ID).
\b
After the migration: ms_fmk_transplt kit aoe|profile|precision -i INPUT -o OUTPUT -m MAIN
(AOE tuning, profiling, the GPU/NPU precision comparison; see ms_fmk_transplt kit -h).
\b
Exit codes: 0 success; 1 finished, but some files could not be processed (copied unchanged,
listed in the log); 2 bad command line, input or output (nothing written); 3 internal error
(nothing written; <name>_msft.interrupted.log has the traceback); 130 interrupted (Ctrl-C or
SIGTERM: the partial output is removed; <name>_msft.interrupted.log says how far it got).
"""


@click.group(context_settings=CONTEXT, invoke_without_command=True, epilog=EPILOG)
@click.option(
    "-i",
    "--input",
    "input_path",
    required=True,
    metavar="PATH",
    help="Folder of the GPU project, or a single .py file (its folder names the output).",
)
@click.option(
    "-o",
    "--output",
    "output_path",
    required=True,
    metavar="DIR",
    help="Folder in which <name>_msft is created (made if missing; not inside the input).",
)
@click.option(
    "-r",
    "--rule",
    "rule_file",
    metavar="JSON",
    help="User rules (ArgsModifyRule, FuncNameModifyRule, ModuleNameModifyRule), applied first.",
)
@click.option(
    "-s",
    "--specify-device",
    is_flag=True,
    help="Hard-coded device indices use the NPU in the DEVICE_ID environment variable (default 0).",
)
@click.option(
    "-sim",
    "--similar",
    is_flag=True,
    help="Replace APIs the NPU lacks by similar ones (rules/similar_api.json; each has a caveat).",
)
@click.option(
    "-v",
    "--target-version",
    metavar="X.Y.Z",
    shell_complete=complete_versions,
    help="torch_npu version the output targets (2.1.0, 2.6.0, 2.7.1, 2.8.0, ...; default the "
    "newest known): torch.npu names it lacks are left alone and reported, operator support "
    "and advice follow its documentation.",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing <name>_msft folder.")
@click.option(
    "--analyse",
    "--analyze",
    "analyse",
    is_flag=True,
    help="Analysis only: write the reports to OUTPUT/<name>_analysis, no migrated code.",
)
@click.option(
    "-j",
    "--jobs",
    type=Bounded("jobs"),
    default=0,
    show_default="one per core",
    metavar="N",
    help=f"Worker processes (0: one per core; at most {MAX_JOBS}).",
)
@click.option("--no-cache", is_flag=True, help="Do not reuse or store cached results.")
@click.option(
    "--max-file-size",
    "max_file_mib",
    type=Bounded("mib"),
    default=None,
    metavar="MIB",
    help="Larger files are copied unchanged (and reported). Default 32, and 5 for a file a "
    f"LibCST stage of -r/-sim/distributed acts on; 0.001 to {MAX_FILE_MIB}.",
)
@click.option(
    "--file-timeout",
    "file_timeout",
    type=Bounded("seconds"),
    default=None,
    metavar="SECONDS",
    help="A file still being migrated after this long is copied unchanged (and reported), the "
    f"run goes on. Default 60; 0: no bound; at most {MAX_FILE_SECONDS}.",
)
@click.option(
    "--zoo",
    is_flag=True,
    help="INPUT is a model zoo: migrate each sub-folder into OUTPUT/<model>_msft, plus "
    "OUTPUT/<zoo>_zoo_summary.csv/.xlsx.",
)
@click.option(
    "--cache-dir", metavar="DIR", help="Cache location (default ~/.cache/ms_fmk_transplt)."
)
@click.option(
    "--shard",
    metavar="I/N",
    help="Migrate part I of N only (a stable split of the files, or of the models with --zoo), "
    "into <name>_msft.shard-I-of-N; for a CI matrix.",
)
@click.option(
    "--merge-shards",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Assemble <name>_msft (or the zoo summary) from the N parts written with --shard.",
)
@click.option("-q", "--quiet", is_flag=True, help="Print only errors (no progress, no summary).")
@click.option("--verbose", is_flag=True, help="One line per Python file.")
@click.option(
    "--select",
    multiple=True,
    metavar="IDS",
    shell_complete=complete_rule_ids,
    help="Apply only these rule ids or id prefixes (comma-separated or repeated).",
)
@click.option(
    "--ignore",
    multiple=True,
    metavar="IDS",
    shell_complete=complete_rule_ids,
    help="Do not apply these rule ids or id prefixes (as `# msft: ignore[...]` on every line).",
)
@click.option(
    "--no-todo-comments",
    is_flag=True,
    help="No `# msft: TODO[...]` comments on lines distributed -m could not finish (rows stay).",
)
@click.option(
    "--npu-option",
    "npu_options",
    multiple=True,
    metavar="NAME=VALUE",
    help="TensorFlow: set an Ascend TF adapter option (precision_mode, iterations_per_loop, "
    "...) in the NPURunConfig / npu_device configs the migration creates; checked against the "
    "adapter's documented options and values (repeatable).",
)
@click.option(
    "--output-format",
    "--report-format",
    "report_format",
    type=click.Choice(["text", "json", "sarif"]),
    default="text",
    show_default=True,
    help="json: print a machine-readable run summary (counts, per-file results, report paths); "
    "sarif: the open work and advice, in the migrated files (SARIF 2.1.0).",
)
@COLOR_OPTION
@click.option(
    "--isolated",
    is_flag=True,
    help="Ignore pyproject.toml configuration (by default [tool.ms_fmk_transplt] of the nearest "
    "pyproject.toml having one, at or above INPUT up to its project root (the first folder "
    "holding .git; INPUT's folder alone without one), gives the options not given here).",
)
@click.version_option(__version__, "-V", "--version", prog_name="ms_fmk_transplt")
@click.pass_context
@configured("run", lambda params: str(params["input_path"]))
def main(
    ctx: click.Context,
    input_path: str,
    output_path: str,
    rule_file: str | None,
    specify_device: bool,
    similar: bool,
    target_version: str | None,
    overwrite: bool,
    analyse: bool,
    jobs: int,
    no_cache: bool,
    zoo: bool,
    max_file_mib: float | None,
    file_timeout: float | None,
    cache_dir: str | None,
    shard: str | None,
    merge_shards: int | None,
    quiet: bool,
    verbose: bool,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    no_todo_comments: bool,
    npu_options: tuple[str, ...],
    report_format: str,
    color: str,
) -> None:
    """Migrate CUDA PyTorch training code to Ascend NPUs (torch_npu).

    Writes a migrated copy of INPUT to OUTPUT/<name>_msft with change_list.csv,
    unsupported_op.xlsx/.csv (what is left to do on the NPU) and msFmkTranspltlog.txt at its root.
    The input is never modified.
    """
    from ms_fmk_transplt import run_cli
    from ms_fmk_transplt.pipeline import rule_patterns
    from ms_fmk_transplt.records import RunOptions

    version, shard_part = _version_and_shard(target_version, shard, merge_shards)
    ctx.obj = RunOptions(
        input=input_path,
        output=output_path,
        overwrite=overwrite,
        analyse=analyse,
        rule_file=rule_file,
        specify_device=specify_device,
        similar=similar,
        target_version=version,
        select=rule_patterns(select),
        ignore=rule_patterns(ignore),
        todo_comments=not no_todo_comments,
        npu_options=npu_options,
        jobs=jobs,
        max_file_mib=max_file_mib,
        file_timeout=file_timeout,
        use_cache=not no_cache,
        cache_dir=cache_dir,
        shard=shard_part,
        merge_shards=merge_shards or 0,
        config_file=ctx.meta.get("config_file", ""),
    )
    ctx.meta["quiet"] = quiet
    ctx.meta["verbose"] = verbose
    ctx.meta["machine_format"] = report_format if report_format != "text" else ""
    ctx.meta["color"] = color
    if zoo:
        if ctx.invoked_subcommand is not None:
            fail("--zoo cannot be combined with distributed")
        run_cli.execute_zoo(ctx.obj, quiet, verbose, color)
        return
    if ctx.invoked_subcommand is None:
        run_cli.execute(ctx.obj, quiet, verbose, ctx.meta["machine_format"], color)


def _version_and_shard(
    target_version: str | None, shard: str | None, merge_shards: int | None
) -> tuple[str, tuple[int, int] | None]:
    """-v resolved ("": the newest known) and --shard I/N parsed; a bad value exits with one
    line."""
    version = resolved_version(target_version)
    shard_part = None
    if shard is not None:
        from ms_fmk_transplt.shards import parse_shard

        try:
            shard_part = parse_shard(shard)
        except ValueError as exc:
            fail(f"--shard: {exc}")
        if merge_shards:
            fail("--shard and --merge-shards cannot be combined: merge once every part is done")
    return version, shard_part


def resolved_version(target_version: str | None) -> str:
    """-v resolved ("": the newest known); a bad value exits with one line."""
    if target_version is None:
        return ""
    from ms_fmk_transplt.tables import resolve_version

    try:
        return resolve_version(target_version)
    except ValueError as exc:
        fail(f"-v/--target-version: {exc}")


@main.command(context_settings=CONTEXT)
@click.option(
    "-m",
    "--main",
    "main_file",
    required=True,
    metavar="MAIN",
    help="Entry script of the training (a .py file of the input, relative to it).",
)
@click.option(
    "-t",
    "--target-model",
    "targets",
    multiple=True,
    default=("model",),
    show_default=True,
    metavar="MODEL",
    help="Variable holding a model to wrap in DistributedDataParallel; repeat it, or give a "
    "comma-separated list, for several models (-t netD -t netG, -t netD,netG).",
)
@click.option(
    "--no-rank-guards",
    is_flag=True,
    help="Let every process save files and print per-step logs (default: rank 0 only).",
)
@click.pass_context
def distributed(
    ctx: click.Context, main_file: str, targets: tuple[str, ...], no_rank_guards: bool
) -> None:
    """Turn a single-card training script into a data-parallel multi-NPU one.

    MAIN gets an hccl process group, a DistributedSampler for its training DataLoaders and
    DistributedDataParallel around each MODEL; saves and per-step prints run on rank 0 only;
    run_distributed_npu.sh (at the root of the output) launches it. A script that already sets
    up distributed training is only migrated. Must come last on the command line, as in the
    original tool.
    """
    names = [n.strip() for t in targets for n in t.split(",") if n.strip()]
    bad = [n for n in names if not n.isidentifier() or keyword.iskeyword(n)]
    if bad or not names:
        what = "a Python keyword, not" if bad and keyword.iskeyword(bad[0]) else "not"
        fail(f"distributed -t: {bad[0] if bad else '(empty)'!r} is {what} a variable name")
    from ms_fmk_transplt import run_cli

    options = dataclasses.replace(
        ctx.obj,
        main_script=main_file,
        distributed_target=",".join(dict.fromkeys(names)),
        rank_guards=not no_rank_guards,
    )
    run_cli.execute(
        options,
        ctx.meta.get("quiet", False),
        ctx.meta.get("verbose", False),
        ctx.meta.get("machine_format", ""),
        ctx.meta.get("color", "auto"),
    )
