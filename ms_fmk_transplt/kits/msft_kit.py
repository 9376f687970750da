"""msft_kit: the runtime of an ms_fmk_transplt kit (aoe, profile, precision, assess or overflow).

``ms_fmk_transplt kit`` writes this file next to the training script and calls it at the places
change_list.csv lists (rules ``kit.*``): ``<kit>_begin()`` right before the training loop and
``<kit>_tick()`` as the first statement of its body, so tick ``i`` runs once steps ``0 .. i-1``
have finished, whatever ``continue`` or closures the loop uses. The launcher of the kit sets the
environment variables below; without them the defaults hold. The tool itself never imports this
module: it is copied, not run, and imports torch, torch_npu and msprobe only when called.

* aoe (the porting guide's "AOE tuning" chapter): ``torch.npu.set_aoe(MSFT_AOE_DUMP)`` before
  the loop; the run stops when step 0 has finished (the guide's ``if i > 0: exit()``), leaving
  the operators' dump for ``aoe --job_type=2 --model_path=$MSFT_AOE_DUMP``.
* profile: ``torch_npu.profiler.profile`` over MSFT_PROF_ACTIVE steps after MSFT_PROF_SKIP_FIRST
  skipped, MSFT_PROF_WAIT waiting and MSFT_PROF_WARMUP warm-up steps (CPU and NPU activities,
  profiler level 1), traces in MSFT_PROF_DIR; the run stops when they are written.
* precision: seeds fixed and dropout off at start-up (msprobe's ``seed_all``), then msprobe's
  PrecisionDebugger dumps step 0 into MSFT_PRECISION_DUMP (config: MSFT_PRECISION_CONFIG,
  default msprobe_config.json next to this file); the run stops after it. The same calls in the
  GPU script and the NPU script give two dumps for ``msprobe compare``.

* assess: msft_assess.py (next to this file) records every torch API call of steps
  0..MSFT_ASSESS_STEPS-1 (default 5) with its dtypes and shapes, and the torch.cuda calls, into
  MSFT_ASSESS_DIR (default ``assess``): ops.csv, cuda_calls.csv, report.html; the NPU column
  from msft_ops.json next to this file. Project lines are those under MSFT_ASSESS_ROOT (default:
  the working directory, or the main script's folder when the script is outside it).
  ``assess_end()`` right after the loop pauses the recording when the loop ends early.

* overflow (the porting guide's operator overflow detection): msft_overflow.py (next to this
  file) checks every operator of steps 0..MSFT_OVERFLOW_STEPS-1 (default 10); the first whose
  output holds inf or nan out of finite inputs is written, with its call site and step, into
  MSFT_OVERFLOW_DIR/overflow.json (default ``overflow``), and the run stops at the next step.
  The call site is the innermost frame under MSFT_OVERFLOW_ROOT (default: the working folder).

A loop that ends before the kit is done (too few batches) is finished at exit.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import json
import os
import sys
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
# the kit's progress; "folder": where it writes, "handle": what to stop at exit if the loop
# ends before the kit is done (the started profiler or debugger), "debugger": precision's,
# "last": the tick that ends a profile
_state: dict[str, Any] = {"ticks": 0, "begun": False, "done": False}


def _number(name: str, default: int) -> int:
    text = os.environ.get(name, "")
    try:
        value = int(text) if text else default
    except ValueError:
        raise SystemExit(f"msft_kit: {name}={text!r} is not a whole number") from None
    if value < 0:
        raise SystemExit(f"msft_kit: {name}={text!r} is negative")
    return value


def _folder(name: str, default: str) -> str:
    """An absolute folder (made if missing) from ``name`` in the environment or ``default``,
    relative to the working directory."""
    path = os.path.abspath(os.environ.get(name) or default)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        problem = f"cannot make the folder ({exc.strerror})"
        raise SystemExit(f"msft_kit: {name}={path}: {problem}") from None
    return path


def _say(message: str) -> None:
    print(f"msft_kit: {message}", file=sys.stderr, flush=True)


def _stop_run(message: str) -> None:
    """The kit's work is done: the training run ends here (SystemExit, so exit handlers and
    buffered output still run)."""
    _state["done"] = True
    _say(message)
    raise SystemExit(0)


def _first_begin(folder: str, default: str) -> bool:
    """True the first time a ``*_begin`` is reached (a loop inside a per-epoch function reaches
    it every epoch; only the first counts), with the kit's folder made (``folder`` in the
    environment, or ``default``)."""
    if _state["begun"]:
        return False
    _state.update(begun=True, folder=_folder(folder, default))
    return True


def _stop_at_exit(message: str) -> None:
    """At exit, a loop that ended before the kit was done: its handle stopped."""
    handle = _state.get("handle")
    if not _state["done"] and handle is not None:
        _state["done"] = True
        handle.stop()
        _say(message)


def _next_tick() -> int:
    """The index of the step about to start (the number of ticks before this one). Once the
    kit is done the run ends here again: a bare ``except:`` around the loop swallowed the
    first SystemExit."""
    if _state["done"]:
        raise SystemExit(0)
    index: int = _state["ticks"]
    _state["ticks"] = index + 1
    return index


# -- aoe -------------------------------------------------------------------------------------
def aoe_begin() -> None:
    if not _first_begin("MSFT_AOE_DUMP", "aoe_dump"):
        return
    torch = importlib.import_module("torch")
    importlib.import_module("torch_npu")
    torch.npu.set_aoe(_state["folder"])
    _say(f"aoe: operator dump enabled into {_state['folder']}")


def aoe_tick() -> None:
    if _next_tick() > 0:
        path = _state["folder"]
        _stop_run(f"aoe: step 0 dumped into {path}; next: aoe --job_type=2 --model_path={path}")


# -- profile ---------------------------------------------------------------------------------
def profile_begin() -> None:
    if not _first_begin("MSFT_PROF_DIR", "profile"):
        return
    profiler = importlib.import_module("torch_npu.profiler")
    skip_first, wait = _number("MSFT_PROF_SKIP_FIRST", 10), _number("MSFT_PROF_WAIT", 1)
    warmup, active = _number("MSFT_PROF_WARMUP", 1), max(1, _number("MSFT_PROF_ACTIVE", 2))
    settings = profiler._ExperimentalConfig(
        profiler_level=profiler.ProfilerLevel.Level1,
        aic_metrics=profiler.AiCMetrics.PipeUtilization,
    )
    prof = profiler.profile(
        activities=[profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.NPU],
        # torch_npu's schedule is (wait, active, warmup, repeat, skip_first): keywords only
        schedule=profiler.schedule(
            wait=wait, warmup=warmup, active=active, repeat=1, skip_first=skip_first
        ),
        on_trace_ready=profiler.tensorboard_trace_handler(_state["folder"]),
        record_shapes=True,
        profile_memory=True,
        experimental_config=settings,
    )
    prof.start()
    first = skip_first + wait + warmup
    _state.update(handle=prof, last=first + active)
    atexit.register(_stop_at_exit, "profile: the loop ended before the profiled steps")
    _say(f"profile: steps {first}..{first + active - 1}")


def profile_tick() -> None:
    index = _next_tick()
    prof = _state.get("handle")
    if index == 0 or prof is None:
        return
    prof.step()  # step index-1 has finished
    if index >= _state["last"]:
        prof.stop()
        _stop_run(f"profile: traces written into {_state['folder']}")


# -- precision -------------------------------------------------------------------------------
def precision_seed() -> None:
    """Seeds fixed, deterministic algorithms on, dropout off: the same numbers on both sides."""
    msprobe = importlib.import_module("msprobe.pytorch")
    msprobe.seed_all(seed=_number("MSFT_SEED", 1234), mode=True, rm_dropout=True)


def precision_begin() -> None:
    if not _first_begin("MSFT_PRECISION_DUMP", "precision_dump"):
        return
    msprobe = importlib.import_module("msprobe.pytorch")
    config = os.environ.get("MSFT_PRECISION_CONFIG") or os.path.join(_HERE, "msprobe_config.json")
    debugger = msprobe.PrecisionDebugger(config_path=config, dump_path=_state["folder"])
    _state["debugger"] = debugger
    atexit.register(_stop_at_exit, "precision: the loop ended after step 0; dump finished")


def precision_tick() -> None:
    index = _next_tick()
    debugger = _state.get("debugger")
    if debugger is None:
        return
    if index == 0:
        debugger.start()
        _state["handle"] = debugger  # started: stopped at exit if the loop ends here
        return
    debugger.stop()
    debugger.step()
    _stop_run(f"precision: step 0 dumped into {_state['folder']}")


# -- assess ----------------------------------------------------------------------------------
def _assess_root() -> str:
    """The project's folder: MSFT_ASSESS_ROOT, else the kit tree's root msft_ops.json names
    (the -m script may be in a sub-folder), else the working directory or the script's."""
    root = os.environ.get("MSFT_ASSESS_ROOT")
    if root:
        return os.path.abspath(root)
    try:
        with open(os.path.join(_HERE, "msft_ops.json"), encoding="utf-8") as fh:
            tree = json.load(fh).get("root")
    except (OSError, ValueError, AttributeError):
        tree = None
    if isinstance(tree, str):
        return os.path.normpath(os.path.join(_HERE, tree))
    cwd = os.path.join(os.getcwd(), "")
    main = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if not main or not os.path.isfile(main) or main.startswith(cwd):
        return os.getcwd()
    return os.path.dirname(main)


def _runtime(name: str) -> Any:
    """The kit's module ``name`` (copied next to this file), loaded and registered."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, f"{name}.py"))
    if spec is None or spec.loader is None:
        raise SystemExit(f"msft_kit: {name}.py is missing next to {_HERE}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _assess_at_exit() -> None:
    """At exit, a loop that ended before the steps were recorded: the reports of what was."""
    recorder = _state.get("handle")
    if not _state["done"] and recorder is not None:
        _state["done"] = True
        _say(recorder.stop(ended=True))


def assess_begin() -> None:
    if not _first_begin("MSFT_ASSESS_DIR", "assess"):
        return
    assess = _runtime("msft_assess")
    steps = max(1, _number("MSFT_ASSESS_STEPS", 5))
    table = os.path.join(_HERE, "msft_ops.json")
    recorder = assess.Recorder(_state["folder"], steps, _assess_root(), table)
    recorder.start()
    _state["handle"] = recorder
    atexit.register(_assess_at_exit)
    _say(f"assess: recording steps 0..{steps - 1} into {_state['folder']}")


def assess_tick() -> None:
    index = _next_tick()
    recorder = _state.get("handle")
    if recorder is not None and recorder.tick(index):
        _stop_run(recorder.stop())


def assess_end() -> None:
    """Right after the training loop: a loop that ended before the last step pauses the
    recording until its next iteration (the next epoch), if any."""
    recorder = _state.get("handle")
    if recorder is not None and not _state["done"]:
        recorder.loop_end()


# -- overflow --------------------------------------------------------------------------------
def _overflow_at_exit() -> None:
    """At exit, a loop that ended before the steps were checked: what was found."""
    recorder = _state.get("handle")
    if not _state["done"] and recorder is not None:
        _state["done"] = True
        _say(recorder.stop(_state["ticks"]))


def overflow_begin() -> None:
    if not _first_begin("MSFT_OVERFLOW_DIR", "overflow"):
        return
    overflow = _runtime("msft_overflow")
    steps = max(1, _number("MSFT_OVERFLOW_STEPS", 10))
    root = os.path.abspath(os.environ.get("MSFT_OVERFLOW_ROOT") or os.getcwd())
    recorder = overflow.Recorder(_state["folder"], steps, root)
    recorder.start()
    _state["handle"] = recorder
    atexit.register(_overflow_at_exit)
    _say(f"overflow: checking the operators of steps 0..{steps - 1}")


def overflow_tick() -> None:
    index = _next_tick()
    recorder = _state.get("handle")
    if recorder is not None and recorder.tick(index):
        _stop_run(recorder.stop(index))
