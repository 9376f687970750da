"""What a kit writes into its tree besides the code (kit aoe|profile|precision|assess): its
runtime msft_kit.py (and msprobe_config.json for precision; the files of report/kit_assess.py for
assess) next to the -m script, the launcher(s) at the root, and KIT_README.md: where each call
went (from the run's records), what the kit's guide asks of the script and what was found, what
to run next."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ms_fmk_transplt import kits
from ms_fmk_transplt.engine.rules.family_exports import PRECONDITION, TENSORFLOW, is_kit_call
from ms_fmk_transplt.events import Severity
from ms_fmk_transplt.records import RunResult
from ms_fmk_transplt.report import kit_assess, kit_launchers
from ms_fmk_transplt.report.log import target_version
from ms_fmk_transplt.safe_names import shown
from ms_fmk_transplt.safety.fs_safety import write_file, write_text
from ms_fmk_transplt.scan.discover import OUTPUT_SUFFIX

README = "KIT_README.md"
RUNTIME = ("msft_kit.py", "msprobe_config.json")  # next to the -m script
# msprobe's dump of step 0: statistics of every API's inputs and outputs (task "tensor" keeps
# the tensors too); level L1 hooks the APIs, which needs no model handed to the debugger
MSPROBE_CONFIG = {
    "task": "statistics",
    "dump_path": "./precision_dump",
    "rank": [],
    "step": [0],
    "level": "L1",
    "extra_info": True,
    "async_dump": False,
    "statistics": {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": "statistics"},
}
_ENV = {
    "aoe": ", MSFT_AOE_DUMP (./aoe_dump), TUNE_BANK_PATH (./aoe_bank), ASCEND_SET_ENV (CANN's "
    "set_env.sh), ASCEND_RT_VISIBLE_DEVICES (its first card; 0)",
    "profile": ", MSFT_PROF_DIR (./profile), MSFT_PROF_SKIP_FIRST (10), MSFT_PROF_WAIT (1), "
    "MSFT_PROF_WARMUP (1), MSFT_PROF_ACTIVE (2), ASCEND_SET_ENV (CANN's set_env.sh), "
    "ASCEND_RT_VISIBLE_DEVICES (its first card; 0)",
    "precision": ", MSFT_PRECISION_DUMP (./precision_dump), MSFT_PRECISION_CONFIG "
    "(msprobe_config.json next to the script), MSFT_SEED (1234), ASCEND_SET_ENV (CANN's "
    "set_env.sh, sourced when present), ASCEND_RT_VISIBLE_DEVICES on the NPU and "
    "CUDA_VISIBLE_DEVICES on the GPU (their first card; 0)",
    "assess": ", MSFT_ASSESS_STEPS (the training steps recorded), MSFT_ASSESS_DIR (./assess)",
    "overflow": ", MSFT_OVERFLOW_STEPS (10: the steps checked), MSFT_OVERFLOW_DIR (./overflow), "
    "MSFT_OVERFLOW_ROOT (the tree: its frames make the call site), ASCEND_SET_ENV (CANN's "
    "set_env.sh), ASCEND_RT_VISIBLE_DEVICES (its first card; 0)",
}
_TITLES = {
    "aoe": "AOE operator tuning: dump one step's operators on one NPU, then tune them",
    "profile": "Profile a few training steps on the NPU with torch_npu.profiler",
    "precision": "Dump one training step with msprobe for the GPU/NPU comparison",
    "assess": "Record the torch APIs a few training steps of the original script call",
    "overflow": "Find the first operator whose output overflows to inf/nan on the NPU",
}


_TF_ENV = {
    "aoe": ", AOE_MODE (2), TUNE_BANK_PATH (./aoe_bank), ASCEND_WORK_PATH (./aoe_work), "
    "ASCEND_DEVICE_ID (0), ASCEND_SET_ENV (CANN's set_env.sh)",
    "profile": ", MSFT_PROF_DIR (./profile), PROFILING_OPTIONS (a JSON; its output is "
    "MSFT_PROF_DIR), ASCEND_SET_ENV (CANN's set_env.sh)",
}


def tensorflow_route(result: RunResult) -> bool:
    """Whether the kit took its TensorFlow route on the -m script (``kit.tensorflow``: the
    engine's own decision; a PyTorch script that imports TensorFlow takes the loop's)."""
    main = result.main_result
    return main is not None and any(n.rule == TENSORFLOW for n in main[1].notices)


def kit_stem(name: str) -> str:
    """The project's name without the ``_msft`` of a migrated tree."""
    return name.removesuffix(OUTPUT_SUFFIX) or name


def tree_name(stem: str, kind: str, gpu: bool = False) -> str:
    """The folder of a kit's tree: ``<stem>_msft_<kit>``; the GPU side of the precision kit,
    ``<stem>_gpu_precision``."""
    return f"{stem}_gpu_{kind}" if gpu else f"{stem}_msft_{kind}"


COMPARE_SUMMARY = "msft_compare.py"
# each launcher's template: (for a PyTorch script, for the TensorFlow route)
_LAUNCHERS = {
    "run_aoe_npu.sh": (kit_launchers.AOE, kit_launchers.AOE_TF),
    "run_profile_npu.sh": (kit_launchers.PROFILE, kit_launchers.PROFILE_TF),
    "run_precision.sh": (kit_launchers.PRECISION, kit_launchers.PRECISION),
    "compare.sh": (kit_launchers.COMPARE, kit_launchers.COMPARE),
    "run_assess.sh": (kit_launchers.ASSESS, kit_launchers.ASSESS),
    "run_overflow_npu.sh": (kit_launchers.OVERFLOW, kit_launchers.OVERFLOW),
}
OVERFLOW_RUNTIME = "msft_overflow.py"  # next to msft_kit.py, which loads it


def launcher_names(kind: str, gpu: bool = False) -> tuple[str, ...]:
    if kind == "precision":
        return ("run_precision.sh",) if gpu else ("run_precision.sh", "compare.sh")
    if kind == "assess":  # where the project runs today (the tree is not migrated)
        return ("run_assess.sh",)
    return (f"run_{kind}_npu.sh",)


def root_files(kind: str, gpu: bool = False) -> tuple[str, ...]:
    """The files a kit writes at its tree's root, besides KIT_README.md."""
    summary = (COMPARE_SUMMARY,) if kind == "precision" and not gpu else ()
    return launcher_names(kind, gpu) + summary


def write(staging: Path, result: RunResult, names: dict[str, str]) -> None:
    """The kit's files; ``names``: the root files' names (report/names.py)."""
    kind, entry = result.options.kit, result.kit_entry or result.main_rel or ""
    gpu, tf = result.options.kit_gpu_side, tensorflow_route(result)
    folder = staging / Path(entry).parent  # on sys.path when the script runs
    if kind == "assess":  # (run/main_script.py refused a msft_kit.py already there)
        for path in kit_assess.runtime_files():
            _replace_own(folder / path.name, entry, result)
            write_file(folder / path.name, path.read_bytes())
        _replace_own(folder / kit_assess.OPS_JSON, entry, result)
        inserted = kit_assess.inserted_lines(result.events, Path(entry).parent)
        root = Path(os.path.relpath(".", Path(entry).parent.as_posix() or ".")).as_posix()
        text = kit_assess.ops_json(result.tables.operators, inserted, root)
        write_text(folder / kit_assess.OPS_JSON, text)
    elif not tf:  # a TensorFlow kit works through the environment: no call, no runtime
        runtime = Path(kits.__file__).with_name("msft_kit.py").read_bytes()
        write_file(folder / "msft_kit.py", runtime)  # (main_script refused one already there)
    if kind == "overflow":
        _replace_own(folder / OVERFLOW_RUNTIME, entry, result)
        write_file(
            folder / OVERFLOW_RUNTIME, Path(kits.__file__).with_name(OVERFLOW_RUNTIME).read_bytes()
        )
    if kind == "precision":
        text = json.dumps(MSPROBE_CONFIG, indent=2) + "\n"
        _replace_own(folder / "msprobe_config.json", entry, result)
        write_text(folder / "msprobe_config.json", text)
    if kind == "precision" and not gpu:  # compare.sh's summary
        summary = Path(kits.__file__).with_name("msft_compare.py").read_bytes()
        write_file(staging / names[COMPARE_SUMMARY], summary)
    gpu_tree = tree_name(kit_stem(result.project.name), kind, gpu=True)
    for launcher in launcher_names(kind, gpu):
        template = _LAUNCHERS[launcher][tf]
        write_text(
            staging / names[launcher],
            kit_launchers.render(
                template,
                kind=kind,
                name=names[launcher],
                main_rel=entry,
                title=_TITLES[kind],
                env=_TF_ENV[kind] if tf else _ENV[kind],
                side="GPU" if gpu else "NPU",
                gpu_tree=gpu_tree,
                summary=names.get(COMPARE_SUMMARY, COMPARE_SUMMARY),
                steps=result.options.kit_steps or 5,
            ),
            mode=0o755,
        )
    readme = render_readme(result, names, gpu_tree)
    write_text(staging / names[README], readme)


def _replace_own(path: Path, entry: str, result: RunResult) -> None:
    """The project's own file (or link) where the kit writes one of its files: replaced in the
    copy (never written through), and said."""
    if os.path.lexists(path):
        what = "symbolic link" if path.is_symlink() else "file"
        keeps = "the input keeps it"
        if path.name == "msprobe_config.json":
            keeps += ": MSFT_PRECISION_CONFIG=<its path> uses it"
        result.notes.append(
            (
                Severity.WARNING,
                f"the project's own {path.name} ({what}) next to {shown(entry)} is replaced by "
                f"the kit's in the output ({keeps})",
            )
        )


def render_readme(result: RunResult, names: dict[str, str], gpu_tree: str) -> str:
    """KIT_README.md; the names from the input as shown to people (safe_names.shown)."""
    kind, main_rel = result.options.kit, shown(result.main_rel or "")
    entry, gpu_tree = shown(result.kit_entry or result.main_rel or ""), shown(gpu_tree)
    gpu, project = result.options.kit_gpu_side, shown(result.project.name)
    what = (
        f"{project} as written (not migrated: the GPU side of the comparison)"
        if gpu
        else f"{project} migrated to the NPU (torch_npu {target_version(result)})"
    )
    if kind == "assess":
        what = f"{project} as written (not migrated: it runs where the project runs today)"
    lines = [
        f"# The {kind} kit of {project}",
        "",
        f"Written by `ms_fmk_transplt kit {kind}`: {what}, with the kit's calls in `{main_rel}`"
        + (f" (the training loop's file; the launcher runs `{entry}`)" if entry != main_rel else "")
        + ". "
        "Your own trees are unchanged; to go back, use the plain migration (or the original).",
        "",
        f"## What was inserted ({names['change_list.csv']}, rules `kit.*`)",
        "",
        "| where | rule | inserted |",
        "| --- | --- | --- |",
    ]
    for event in result.events:
        if is_kit_call(event.rule):
            line = event.out_start_line or event.start_line
            lines.append(f"| `{shown(event.file)}:{line}` | `{event.rule}` | `{event.after}` |")
    tf = tensorflow_route(result)
    if tf:
        lines += ["", _TF_ROUTE[kind]]
    else:
        lines += ["", f"`msft_kit.py` next to `{entry}` is the kit's runtime: each call is "]
        lines[-1] += "explained at the top of that file."
    lines += ["", "## What the kit's guide asks of the script", ""]
    lines += [f"- {text}" for text in (_TF_PRECONDITIONS if tf else _PRECONDITIONS)[kind]]
    found = [n for n in result.notices if n.rule == PRECONDITION]
    where = "Found in the script and what it runs (lines of the input, as on the terminal):"
    lines += ["", where if found else "Nothing of the above was found in it."]
    lines += [f"- `{shown(n.file)}:{n.line}`: {n.message}" for n in found]
    lines += ["", "## Next", ""]
    if kind == "assess":
        note = result.tables.operators.note
        lines += kit_assess.readme_next(names["run_assess.sh"], target_version(result), note)
    else:
        lines += _tf_next_steps(kind, names) if tf else _next_steps(kind, names, gpu, gpu_tree)
    return "\n".join(lines) + "\n"


_PRECONDITIONS = {
    "aoe": (
        "Static shapes: AOE tunes static operators only; a model whose shapes change from step "
        "to step is tuned for the shapes of the step dumped.",
        "One card: the launcher runs one process on the first NPU (several would overwrite "
        "each other's dump); a script that needs a process group runs with "
        '`PYTHON="torchrun --nproc_per_node=1"`.',
        "Profiling off.",
        "Disk: 20 GB free in your home folder (the launcher warns below that).",
        "The run stops when the loop's first iteration has finished (the guide's `if i > 0: "
        "exit()`): whatever that iteration runs (an evaluation inside the loop too) is dumped.",
    ),
    "profile": (
        "Steps skipped first (MSFT_PROF_SKIP_FIRST, 10) let compilation and caches settle; the "
        "run stops once the active steps' traces are written.",
        "No other profiler around the loop.",
    ),
    "precision": (
        "Both sides run the same script (this kit's GPU tree and NPU tree), with the same "
        "arguments, data and checkpoint.",
        "Seeds are fixed and dropout is off from the start (msprobe's `seed_all`); data must "
        "come from the CPU's random numbers (the GPU's and the NPU's differ); turn off random "
        "augmentation (mixup, cutmix, random erasing, drop-path) on both sides.",
        "One card, eager mode (no `torch.compile`); the loop's first iteration is dumped "
        "(an evaluation inside it too), then the run stops.",
        "Install msprobe on both machines: `pip install mindstudio-probe==26.2.0` (compare.sh "
        "uses its 26.x command line).",
    ),
    "assess": kit_assess.PRECONDITIONS,
    "overflow": (
        "The script already runs on the NPU (the migrated tree); mixed precision as you train "
        "(autocast, a GradScaler): the overflow looked for is the one your training meets.",
        "One card, eager mode (no `torch.compile`: the check sees the operators one by one).",
        "Every operator is checked (a synchronisation each): the steps run much slower; "
        "MSFT_OVERFLOW_STEPS (10) bounds them.",
        "The first operator whose output holds inf or nan while its inputs are finite is "
        "reported; inf/nan the data or a `-inf` mask brings in is not an overflow. With a "
        "GradScaler, a gradient that overflows in an early step is normal (the scaler lowers "
        "its scale and skips the step): read the operator and the step together.",
    ),
}


def _next_steps(kind: str, names: dict[str, str], gpu: bool, gpu_tree: str) -> list[str]:
    if kind == "aoe":
        return [
            f"1. `./{names['run_aoe_npu.sh']} [arguments of the script]` on the NPU machine: the "
            "dump (`aoe_dump/`), then `aoe --job_type=2 --model_path=aoe_dump` with "
            "`TUNE_BANK_PATH` (`aoe_bank/`).",
            "2. Run the migrated script without the kit's calls and compare the step time: the "
            "tuned operators are used from the knowledge base in `TUNE_BANK_PATH`.",
        ]
    if kind == "overflow":
        return [
            f"1. `./{names['run_overflow_npu.sh']} [arguments of the script]` on the NPU "
            "machine: `overflow/overflow.json` names the first operator that overflowed "
            "(`op`), what it produced, its dtype and shape, the `step`, and its call site "
            "(`file`, `line`, `code`, the project's frames in `stack`: lines of this tree, the "
            "code that ran); exit 1 when one did, 0 when none did in the steps checked.",
            "2. At that line: compute it in float32 (outside autocast, or cast its inputs), "
            "scale its inputs down, or clamp; then run the launcher again.",
        ]
    if kind == "profile":
        return [
            f"1. `./{names['run_profile_npu.sh']} [arguments of the script]` on the NPU machine.",
            "2. Open `profile/*_ascend_pt` with MindStudio Insight, or read "
            "`ASCEND_PROFILER_OUTPUT/op_statistic.csv` and `kernel_details.csv`.",
        ]
    if gpu:
        return [
            f"1. `./{names['run_precision.sh']} [arguments]` on the GPU machine: the dump of "
            "step 0 in `precision_dump/`.",
            f"2. Copy this tree's `precision_dump/` to the NPU machine, into `{gpu_tree}/` "
            "beside the NPU tree, where its compare.sh looks.",
        ]
    return [
        f"1. `./run_precision.sh [arguments]` in `{gpu_tree}` on the GPU machine, and "
        f"`./{names['run_precision.sh']} [the same arguments]` here on the NPU machine.",
        f"2. `./{names['compare.sh']}`: `msprobe compare` of the two step0 dumps into "
        "`precision_compare/`, then a summary (rows per Result; exit 1 when a row is an error or "
        "a call has no counterpart, `warning` rows alone exit 0). "
        "The first API whose Result is `error` is where to look.",
    ]


_TF_ROUTE = {
    "aoe": "A TensorFlow script: nothing is inserted. The TF adapter tunes while the script "
    "trains when `AOE_MODE=2` is set (the AOE guide recommends the variable over the "
    "`aoe_mode` option of NPURunConfig or the session config); `run_aoe_npu.sh` sets it with "
    "`TUNE_BANK_PATH` and `ASCEND_WORK_PATH`.",
    "profile": "A TensorFlow script: nothing is inserted. The TF adapter profiles when "
    "`PROFILING_MODE=true` and `PROFILING_OPTIONS` (JSON) are set, as NPURunConfig's "
    "`profiling_config` or the session's `profiling_mode`/`profiling_options` would; "
    "`run_profile_npu.sh` sets them.",
}
_TF_PRECONDITIONS = {
    "aoe": (
        "The script already runs correctly on the NPU; a few steps are enough (one step that "
        "runs the whole graph).",
        "Static operators only; one card (no multi-card tuning); one user per device.",
        "Profiling off and `static_memory_policy=0`; do not bind the process to CPUs.",
        "Disk: 20 GB free in your home folder (the launcher warns below that); memory for "
        "the model times TUNING_PARALLEL_NUM.",
        "Subgraph tuning (`AOE_MODE=1`) does not exist on Atlas A2/A3: the launcher refuses it "
        "there.",
    ),
    "profile": (
        "Run a few steps only (the script's own step count); options the script sets itself "
        "win over the environment.",
    ),
}


def _tf_next_steps(kind: str, names: dict[str, str]) -> list[str]:
    if kind == "aoe":
        return [
            f"1. `./{names['run_aoe_npu.sh']} [arguments of the script, few steps]` on the NPU "
            "machine: results `aoe_work/aoe_result_opat_*.json`, knowledge in `aoe_bank/`.",
            "2. Train again without `AOE_MODE`, with `op_compiler_cache_mode=force` once, and "
            "compare the step time.",
        ]
    return [
        f"1. `./{names['run_profile_npu.sh']} [arguments of the script, few steps]` on the NPU "
        "machine: `profile/PROF_*`.",
        "2. Parse it with `msprof --export=on --output=profile/PROF_...` and open the result "
        "with MindStudio Insight.",
    ]
