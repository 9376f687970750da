"""What a kit's guide asks of the script, checked before the kit's calls go in.

The porting guide's AOE chapter: profiling off, one card (several processes overwrite each
other's dump), static operators only (shapes cannot be told from the code: the kit's README
says it), disk space (the launcher checks it). For profiling: no second profiler around the
loop. For the precision comparison: eager mode (msprobe's hooks do not see inside
``torch.compile``), and one card first. For the assessment: one process, eager mode. Each
finding is a WARNING (``kit.precondition``) on the terminal, in the log and in the kit's README;
the kit is still written. A script whose training
loop cannot take the calls is refused (``kit.no_loop``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ms_fmk_transplt.catalogue.rule_catalog import NOTICE, declare
from ms_fmk_transplt.engine.recorder import Recorder
from ms_fmk_transplt.engine.rules.kit.precision_checks import random_findings
from ms_fmk_transplt.engine.rules.kit.training_loop import (
    NoTrainingLoop,
    TrainingLoop,
    find_training_loop,
)
from ms_fmk_transplt.engine.scope_model import full_name
from ms_fmk_transplt.events import Notice, Severity

NO_LOOP = declare(
    "kit.no_loop",
    "kit: MAIN cannot take the kit's calls (no single training loop), nothing written",
    "A kit's calls go at the training loop: the innermost `for`/`while` holding the optimizer "
    "step (`optimizer.step()`, `scaler.step(optimizer)`, a scaler given the optimizer; "
    "otherwise `.backward()`), also through a step function the loop calls. A script with "
    "none (a trainer's `fit()` runs its own loop), with several (separate generator and "
    "discriminator loops), whose loop runs in a generator, an async function or a lambda, or "
    "whose loop body is on the loop's own line, is refused with this line and exit code 2; so "
    "is a TensorFlow script given to the precision kit (msprobe's PyTorch dump) or to kit assess.",
    kind=NOTICE,
    opt_out="none: a kit needs a training loop; name another script with -m",
    option="kit",
    bookkeeping=True,
)
TENSORFLOW = declare(
    "kit.tensorflow",
    "kit aoe|profile on a TensorFlow script: through the adapter's environment, no call inserted",
    "The TF adapter takes AOE and profiling from the environment its launcher sets: `AOE_MODE=2` "
    "(operator tuning; the AOE guide recommends the variable over script options) with "
    "`TUNE_BANK_PATH` and `ASCEND_WORK_PATH` (where `aoe_result_opat_*.json` goes), or "
    "`PROFILING_MODE=true` with `PROFILING_OPTIONS` (a JSON of what to collect and where), so "
    "the same tree serves estimator, session and Keras scripts, migrated by the tool or by "
    "hand. Options the script sets itself (`profiling_mode`, `aoe_mode`) win over the "
    "environment: they are reported as `kit.precondition`. A script that also imports torch "
    "trains in a PyTorch loop and takes the calls instead.",
    kind=NOTICE,
    opt_out="none: the launcher follows this route; name another script with -m",
    option="kit",
    bookkeeping=True,
)
PRECONDITION = declare(
    "kit.precondition",
    "kit: the script does something the kit's guide asks to turn off (profiling, several cards, "
    "compilation)",
    "AOE tunes one card's operators with profiling off (the porting guide's AOE chapter: "
    "several processes overwrite each other's dump); a second profiler around the loop mixes "
    "two traces; msprobe's dump sees no API inside `torch.compile`, and the guide compares one "
    "card before several; random numbers drawn on the device (`torch.rand(..., "
    "device=x.device)`, `torch.rand_like` or `bernoulli_` in a forward) differ between the GPU "
    "and the NPU from step 0 whatever the seed, as do mixup / cutmix and drop-path left on "
    "(`Mixup(...)`, `mixup_alpha`, `drop_path_rate`, a config's `DROP_PATH_RATE`): the "
    "precision kit reads them in MAIN and the project's modules it imports. With `--loop`, "
    "MAIN's own calls are checked as the loop's file's are. Each finding is a WARNING naming "
    "the line of the input (the terminal's and the README's); the kit is still written and "
    "its README repeats them.",
    kind=NOTICE,
    option="kit",
    bookkeeping=True,
)

_TENSORFLOW = re.compile(rb"^\s*(?:import|from)\s+tensorflow\b", re.M)
_TORCH = re.compile(rb"^\s*(?:import|from)\s+torch\b", re.M)
_TF_PROFILING = ("profiling_mode", "enable_profiling", "ProfilingConfig", "profiling_config")
_TF_AOE = ("aoe_mode", "AOE_MODE")
_TF_MULTI = ("npu_distributed_optimizer_wrapper", "NPUDistributedOptimizer", "hccl", "RANK_SIZE")
# per kit on a TensorFlow script: (words looked for, the warning)
_TF_CHECKS: dict[str, tuple[tuple[tuple[str, ...], str], ...]] = {
    "aoe": (
        (_TF_PROFILING, "the script sets profiling ({name}): AOE needs it off"),
        (_TF_AOE, "the script sets the tuning mode itself ({name}): it wins over AOE_MODE"),
        (
            ("static_memory_policy",),
            "the script sets static_memory_policy: AOE asks for 0 (the AOE guide)",
        ),
        (_TF_MULTI, "several cards ({name}): AOE tunes one card (the AOE guide)"),
    ),
    "profile": (
        (_TF_PROFILING, "the script sets profiling itself ({name}): it wins over PROFILING_MODE"),
    ),
}
_PROFILERS = ("profiler.profile", "autograd.profile", "torch_npu.profiler", "torch.profiler")
_DISTRIBUTED = (
    "init_process_group",
    "DistributedDataParallel",
    "multiprocessing.spawn",
    "mp.spawn",
    "deepspeed.initialize",
)
# per kit: (what is looked for, the warning)
_CHECKS: dict[str, tuple[tuple[tuple[str, ...], str], ...]] = {
    "aoe": (
        (_PROFILERS, "profiling is on ({name}): AOE needs it off"),
        (
            _DISTRIBUTED,
            "distributed training ({name}): AOE tunes on one card (processes would overwrite "
            'each other\'s dump); run one process (PYTHON="torchrun --nproc_per_node=1" if '
            "the script needs a process group)",
        ),
    ),
    "profile": ((_PROFILERS, "the script profiles already ({name}): two profilers at once"),),
    "precision": (
        (
            ("torch.compile",),
            "{name}: msprobe's dump sees no API inside compiled code; compare without it",
        ),
        (_DISTRIBUTED, "distributed training ({name}): compare one card first"),
    ),
    "overflow": (
        (
            ("torch.compile",),
            "{name}: a compiled model runs its operators inside the compiled graph, where the "
            "check does not see each one; look for the overflow without it",
        ),
        (_DISTRIBUTED, "distributed training ({name}): look for the overflow on one card first"),
    ),
    "assess": (
        (
            _DISTRIBUTED,
            "distributed training ({name}): each process would write the same assess/ "
            'folder; record one (PYTHON="torchrun --nproc_per_node=1" if the script needs a '
            "process group)",
        ),
        (
            ("torch.compile",),
            "{name}: a compiled model runs its operators inside the compiled graph, where the "
            "recording may not see each call; assess without it",
        ),
    ),
}


def check_script(ctx: Recorder, tree: ast.Module, kind: str, loop: TrainingLoop) -> bool:
    """Warnings for what the kit's guide asks to turn off; False (and a ``kit.no_loop`` notice)
    when the loop cannot take the calls."""
    if loop.body_line == loop.line:
        ctx.warn(
            (loop.line, loop.line),
            NO_LOOP,
            f"the training loop's body is on the loop's line ({ctx.path}:{loop.line}): "
            "put it on lines of its own",
        )
        return False
    found = _first_matches(_CHECKS[kind], _called(tree), _calls_one_of)
    if kind == "precision":
        found += [(line, message, name) for line, name, message in random_findings(tree)]
    for line, message, name in sorted(found):
        ctx.warn((line, line), PRECONDITION, message, name)
    return True


def _called(tree: ast.Module) -> list[tuple[int, int, str]]:
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    return [(n.lineno, n.col_offset, full_name(n.func) or "") for n in calls]


def project_notices(
    kind: str, files: list[tuple[str, bytes]], entry: str, loop: str
) -> list[Notice]:
    """The checks of what MAIN runs besides the loop's file (check_script's): MAIN's calls when
    the loop is in another file (--loop); for the precision kit, the device random numbers and
    augmentations of each file (``files``: MAIN and the project's modules it imports). Lines
    of the input."""
    notices: list[Notice] = []
    for path, source in files:
        if path == loop:
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):  # (reported by its own migration)
            continue
        found: list[tuple[int, str, str]] = []
        if path == entry:
            found += _first_matches(_CHECKS[kind], _called(tree), _calls_one_of)
        if kind == "precision":
            found += [(line, message, name) for line, name, message in random_findings(tree)]
        for line, message, name in sorted(found):
            notices.append(Notice(path, line, PRECONDITION, Severity.WARNING, message, name))
    return notices


def _calls_one_of(name: str, patterns: tuple[str, ...]) -> bool:
    """``name`` is one of ``patterns``, or ends with one after a dot
    (``dist.init_process_group``)."""
    return any(name == p or name.endswith("." + p) for p in patterns)


def _first_matches(
    checks: tuple[tuple[tuple[str, ...], str], ...],
    found: list[tuple[int, int, str]],
    matches: Callable[[str, tuple[str, ...]], bool],
) -> list[tuple[int, str, str]]:
    """(line, warning, name): each check's warning once, at the first of ``found`` (line,
    column, name) it matches."""
    seen: set[str] = set()
    out: list[tuple[int, str, str]] = []
    for line, _, name in sorted(found):
        for words, message in checks:
            if message not in seen and matches(name, words):
                seen.add(message)
                out.append((line, message.format(name=name), name))
    return out


def is_tensorflow(source: bytes) -> bool:
    """A TensorFlow script: it imports TensorFlow and not torch (a PyTorch script that writes
    its summaries with TensorFlow trains in a PyTorch loop)."""
    return _TENSORFLOW.search(source) is not None and _TORCH.search(source) is None


def tensorflow_notices(ctx: Recorder, source: bytes, kind: str) -> None:
    """A TensorFlow script: the kit works through the launcher's environment (aoe, profile);
    the precision, assess and overflow kits refuse it. ``source``: the file's own lines."""
    if kind in ("precision", "assess", "overflow"):
        what = "dumps PyTorch steps (msprobe's PyTorch API)"
        if kind == "assess":
            what = "records the torch APIs a PyTorch step calls"
        if kind == "overflow":
            what = "checks the operators of PyTorch steps"
        message = f"a TensorFlow script: the {kind} kit {what}; aoe and profile take TensorFlow "
        message += "scripts"
        ctx.warn((1, 1), NO_LOOP, message)
        return
    what = "AOE_MODE=2" if kind == "aoe" else "PROFILING_MODE and PROFILING_OPTIONS"
    message = f"TensorFlow: the launcher sets {what}; no call is inserted"
    ctx.warn((1, 1), TENSORFLOW, message, severity=Severity.INFO)
    check_tf_script(ctx, source, kind)


def check_tf_script(ctx: Recorder, source: bytes, kind: str) -> None:
    """The TensorFlow route: what the script sets itself that the kit's environment cannot
    override (a name, keyword, attribute or string of its code; docstrings left out), once per
    warning, at its first line."""
    words = [(line, 0, word) for line, word in _code_words(ast.parse(source))]
    for line, message, name in _first_matches(
        _TF_CHECKS[kind], words, lambda word, wanted: word in wanted
    ):
        ctx.warn((line, line), PRECONDITION, message, name)


def _code_words(tree: ast.Module) -> list[tuple[int, str]]:
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    words: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute):
            words.append((node.lineno, node.attr))
        elif isinstance(node, ast.keyword) and node.arg:
            words.append((node.lineno, node.arg))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                words.append((node.lineno, node.value))
    return words


def holds_training_loop(source: bytes) -> bool:
    """Whether a file has one training loop that could take the kit's calls."""
    try:
        find_training_loop(source)
    except (NoTrainingLoop, SyntaxError, ValueError):
        return False
    return True


def is_kit_call(rule_id: str) -> bool:
    """Whether a change is one of the kit's calls (a rule of this family)."""
    return rule_id.split(".")[0] == __name__.split(".")[-2]
