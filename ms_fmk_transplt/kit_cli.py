"""``ms_fmk_transplt kit aoe|profile|precision -i PROJECT -o OUT -m MAIN``: the variant of a
project that takes the step after the migration: AOE operator tuning, profiling, or the dump of
one step for the GPU/NPU precision comparison (engine/rules/kit/, report/kit_files.py).

The project (an original GPU one, migrated on the way, or an already migrated one) is written
into ``OUT/<name>_msft_<kit>`` with the kit's calls in MAIN, its runtime next to MAIN and its
launcher and KIT_README.md at the root; the precision kit also writes ``OUT/<name>_gpu_precision``
first: the project as written (no migration) with the same calls, for the GPU side."""

from __future__ import annotations

import dataclasses

import click

from ms_fmk_transplt.config_file import Bounded
from ms_fmk_transplt.errors import fail

KINDS = ("aoe", "profile", "precision")
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.command(context_settings=CONTEXT)
@click.argument("kind", type=click.Choice(KINDS))
@click.option("-i", "--input", "input_path", required=True, metavar="PATH", help="The project.")
@click.option(
    "-o", "--output", "output_path", required=True, metavar="DIR", help="Where the kit's tree goes."
)
@click.option(
    "-m",
    "--main",
    "main_file",
    required=True,
    metavar="MAIN",
    help="The training script (a .py file of the input, relative to it).",
)
@click.option(
    "--loop",
    "loop_file",
    metavar="FILE",
    help="The .py file of the input holding the training loop, when it is not MAIN (a trainer "
    "module MAIN imports): the calls go there, the launcher runs MAIN.",
)
@click.option("-v", "--target-version", metavar="X.Y.Z", help="torch_npu version (as for a run).")
@click.option("--overwrite", is_flag=True, help="Replace the kit's existing tree(s).")
@click.option("-j", "--jobs", type=Bounded("jobs"), default=0, help="Worker processes.")
@click.option("--no-cache", is_flag=True, help="Do not reuse or store cached results.")
@click.option("--cache-dir", metavar="DIR", help="Cache location.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors.")
@click.option("--verbose", is_flag=True, help="One line per Python file.")
@click.option(
    "--color", type=click.Choice(["auto", "always", "never"]), default="auto", help="Colours."
)
def kit(
    kind: str,
    input_path: str,
    output_path: str,
    main_file: str,
    loop_file: str | None,
    target_version: str | None,
    overwrite: bool,
    jobs: int,
    no_cache: bool,
    cache_dir: str | None,
    quiet: bool,
    verbose: bool,
    color: str,
) -> None:
    """Write the KIND variant of the project (aoe, profile or precision) for its -m script.

    \b
    aoe:       torch.npu.set_aoe before the training loop, the run stopped after the first
               step; run_aoe_npu.sh dumps, then tunes with aoe --job_type=2.
    profile:   torch_npu.profiler over a few steps after warm-up; run_profile_npu.sh.
    precision: seeds fixed, msprobe's PrecisionDebugger dumping step 0, in the GPU script
               (<name>_gpu_precision) and the NPU script (<name>_msft_precision) alike;
               run_precision.sh on each side, then compare.sh.

    Exit codes as for a run; 2 also when MAIN has no single training loop.
    """
    from ms_fmk_transplt import run_cli
    from ms_fmk_transplt.cli import resolved_version
    from ms_fmk_transplt.discover import resolve_project
    from ms_fmk_transplt.errors import UserError
    from ms_fmk_transplt.pipeline import check_not_there, output_dir
    from ms_fmk_transplt.records import RunOptions
    from ms_fmk_transplt.report.kit_files import kit_stem, tree_name

    version = resolved_version(target_version)
    try:
        project = resolve_project(input_path)
    except UserError as exc:
        fail(str(exc))
    stem = kit_stem(project.name)
    npu = RunOptions(
        input=input_path,
        output=output_path,
        overwrite=overwrite,
        target_version=version,
        jobs=jobs,
        use_cache=not no_cache,
        cache_dir=cache_dir,
        main_script=main_file,
        kit=kind,
        kit_loop=loop_file,
        output_name=tree_name(stem, kind),
    )
    sides = [npu]
    if kind == "precision":  # the GPU side: the project as written, with the same calls
        gpu = dataclasses.replace(
            npu, select=("kit",), kit_gpu_side=True, output_name=tree_name(stem, kind, gpu=True)
        )
        sides.insert(0, gpu)
    try:  # both trees checked before either is written
        for side in sides:
            check_not_there(output_dir(project, side), side)
    except UserError as exc:
        fail(str(exc))
    run_cli.execute_kit(sides, quiet, verbose, color)
