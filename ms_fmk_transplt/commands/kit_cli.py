"""``ms_fmk_transplt kit aoe|profile|precision|assess|overflow -i PROJECT -o OUT -m MAIN``: the
variant of a project that takes the step after the migration: AOE operator tuning, profiling,
the dump of one step for the GPU/NPU precision comparison, the search for the first operator
that overflows; or the step before it: the assessment run that
records the operators the original really calls (engine/rules/kit/, report/kit_files.py).

The project (an original GPU one, migrated on the way, or an already migrated one) is written
into ``OUT/<name>_msft_<kit>`` with the kit's calls in MAIN, its runtime next to MAIN and its
launcher and KIT_README.md at the root; the precision kit also writes ``OUT/<name>_gpu_precision``
first: the project as written (no migration) with the same calls, for the GPU side; the assess
kit's one tree is the project as written too (it runs where the project runs today)."""

from __future__ import annotations

import dataclasses
from typing import Any

import click

from ms_fmk_transplt.commands.config_file import configured
from ms_fmk_transplt.commands.help_format import CONTEXT, Command
from ms_fmk_transplt.errors import fail
from ms_fmk_transplt.user_options.option_schema import KIT, options_of


@click.command(cls=Command, context_settings=CONTEXT, no_args_is_help=True)
@options_of(KIT)
@click.pass_context
@configured(KIT, lambda params: str(params["input_path"]))
def kit(
    ctx: click.Context, kind: str, quiet: bool, verbose: bool, color: str, **values: Any
) -> None:
    """Write the KIND variant of the project (aoe, profile, precision, assess, overflow) for -m.

    aoe: torch.npu.set_aoe before the training loop, the run stopped after the first step;
    run_aoe_npu.sh dumps, then tunes with aoe --job_type=2.

    profile: torch_npu.profiler over a few steps after warm-up; run_profile_npu.sh.

    precision: seeds fixed, msprobe's PrecisionDebugger dumping step 0, in the GPU script
    (<name>_gpu_precision) and the NPU script (<name>_msft_precision) alike; run_precision.sh
    on each side, then compare.sh.

    assess: the project as written (not migrated), recording the torch APIs the first --steps
    training steps call with their dtypes and shapes; run_assess.sh writes assess/ops.csv and
    assess/report.html (NPU support for -v).

    overflow: every operator of the first steps checked for inf/nan on the NPU;
    run_overflow_npu.sh writes overflow/overflow.json: the first operator that overflowed, its
    call site and step.

    Exit codes as for a run; 2 also when MAIN has no single training loop.
    """
    from ms_fmk_transplt.commands import run_cli
    from ms_fmk_transplt.commands.run_options import run_options
    from ms_fmk_transplt.errors import UserError
    from ms_fmk_transplt.report.kit_files import kit_stem, tree_name
    from ms_fmk_transplt.run.pipeline import check_not_there, output_dir
    from ms_fmk_transplt.scan.discover import resolve_project

    npu = run_options({"kind": kind, **values}, config_file=ctx.meta.get("config_file", ""))
    if npu.kit_steps is not None and kind != "assess":
        fail(f"kit {kind}: --steps is an option of kit assess")
    try:
        project = resolve_project(npu.input)
    except UserError as exc:
        fail(str(exc))
    stem = kit_stem(project.name)
    npu = dataclasses.replace(npu, output_name=tree_name(stem, kind))
    if kind == "assess":  # the project as written, with the kit's calls (as the GPU side)
        npu = dataclasses.replace(npu, select=("kit",), kit_gpu_side=True)
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
