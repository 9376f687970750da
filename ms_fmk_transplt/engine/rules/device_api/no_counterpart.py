"""The row of a `torch.cuda` name the target's `torch.npu` lacks (recorded by the span concerns
through no_npu_counterpart_at; data: the target's rules/torch_npu_names table), and of
an NVIDIA command-line tool the code runs (rule device_api.nvidia_tool, recorded by
DeviceApiSpans)."""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.recorder import Recorder
from ms_fmk_transplt.engine.rules.family_spec import Folding
from ms_fmk_transplt.engine.rules.libraries.library_rows import fold_rows_per_api
from ms_fmk_transplt.events import Notice
from ms_fmk_transplt.tables.unsupported_table import Entry

NO_NPU_COUNTERPART = declare(
    "device_api.no_npu_counterpart",
    "a `torch.cuda.X` the target's `torch.npu` lacks: left unchanged, one row",
    "torch_npu has no counterpart for some `torch.cuda` names (`nvtx`, `jiterator`, "
    "`get_arch_list`, ...; category `cuda_only_api`), and some exist only from a later torch_npu "
    "than the `-v` target (category `version_gap`, whose tip names the first version that has "
    "it). Rewriting them would fail with AttributeError on the NPU, so the code is left as it is "
    "and the row's tip says what to do instead. The uses of one name in one file are one row "
    "listing their lines.",
    kind=OPEN_WORK,
)

NVIDIA_TOOL = declare(
    "device_api.nvidia_tool",
    '`os.popen("nvidia-smi -L")`, `subprocess.run(["nvcc", "--version"])`: an NVIDIA '
    "command-line tool run by the code; left unchanged, one manual row",
    "Code that runs `nvidia-smi` (to count the GPUs, read their memory or topology) or `nvcc` "
    "(to read the CUDA version) finds no such program on an NPU host: the command fails, or "
    "its empty output is read as zero devices. A command whose first word is one of these "
    "tools is listed where it is passed to a call that runs a process (`os.system`, "
    "`os.popen`, `subprocess.run/call/check_call/check_output/Popen/getoutput`, "
    '`shlex.split`) or is assigned as a command (`cmd = "nvidia-smi -L"`, '
    '`cmd = ["nvidia-smi", "topo", "-m"]`); the tip names the Ascend counterpart (`npu-smi '
    "info`, `torch.npu.device_count()`, `torch.npu.mem_get_info()`). The tool's name in a "
    'message (`print("run nvidia-smi to see the devices")`) is not a command and is left alone.',
    kind=OPEN_WORK,
)
NVIDIA_TOOLS = {
    "nvidia-smi": Entry(
        "nvidia-smi",
        "cuda_only_api",
        "manual",
        "no nvidia-smi on an NPU host: Ascend's tool is `npu-smi info` (devices, memory, "
        "health); in Python, torch.npu.device_count(), torch.npu.mem_get_info(), "
        "torch.npu.get_device_name()",
    ),
    "nvcc": Entry(
        "nvcc",
        "cuda_only_api",
        "manual",
        "no CUDA toolkit on an NPU host: read torch_npu.__version__ (and the CANN version of "
        "the Ascend toolkit) instead of the nvcc version",
    ),
}
SHOWN_WORDS = 4  # of a command, in its row
TOOL_WORDS = frozenset({"topo", "nvlink", "mig", "dmon", "pmon", "|", ">", "&&", ";"})
PROCESS_CALLS = frozenset(
    {
        "os.system",
        "os.popen",
        "subprocess.run",
        "subprocess.call",
        "subprocess.check_call",
        "subprocess.check_output",
        "subprocess.Popen",
        "subprocess.getoutput",
        "subprocess.getstatusoutput",
        "shlex.split",
    }
)
PROCESS_LEAVES = frozenset(name.rsplit(".", 1)[-1] for name in PROCESS_CALLS)  # cheap test first


def _first_text(node: ast.expr) -> str | None:
    """The literal text a command starts with: a string, an f-string's first part, a list's or
    tuple's first element."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return _first_text(node.elts[0]) if node.elts else None
    if isinstance(node, ast.JoinedStr):
        node = node.values[0] if node.values else node
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def nvidia_tool(node: ast.expr) -> tuple[str, Entry] | None:
    """(the command as shown, the tool's entry) when ``node`` is a command running an NVIDIA
    tool (``"nvidia-smi -L"``, ``["nvcc", "--version"]``), else None."""
    text = _first_text(node)
    if not text or ("nvidia-smi" not in text and "nvcc" not in text):
        return None
    words = text.split()
    if isinstance(node, (ast.List, ast.Tuple)):
        words = [
            e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
    tool = words[0].rsplit("/", 1)[-1] if words else ""
    entry = NVIDIA_TOOLS.get(tool)
    if entry is None or not _options_follow(words):
        return None
    return " ".join(words[:SHOWN_WORDS]), entry


def _options_follow(words: list[str]) -> bool:
    """The tool alone, or followed by an option, a subcommand or a pipe: a command, not a
    sentence about the tool (``"nvidia-smi not found"``)."""
    return len(words) == 1 or words[1].startswith("-") or words[1] in TOOL_WORDS


def tool_message(command: str) -> str:
    return f"runs the NVIDIA tool `{command}`: there is none on an NPU host; left unchanged"


def no_npu_counterpart_at(
    ctx: Recorder, lines: tuple[int, int], full: str, what: str = "left"
) -> None:
    """A torch.cuda name torch_npu lacks: left as it is, with the table's tip."""
    entry = ctx.tables.cuda_entry(full)
    where = (
        f"torch_npu {ctx.tables.torch_npu_version}'s torch.npu (the -v target)"
        if entry.category == "version_gap"
        else "torch_npu's torch.npu"
    )
    message = f"{full} has no counterpart in {where}; {what} unchanged"
    ctx.unsupported(lines, full, entry, message, rule=NO_NPU_COUNTERPART)


def fold_per_api(notices: list[Notice], done: Folding, probe: str) -> list[Notice]:
    """The family's rows folded (Family.fold): ``nvtx.range_push`` around every phase of a
    training step, ``get_device_capability()`` asked in three kernels of one file: one row per
    file, API and action, listing the lines (``probe``: the capability probes' rule)."""
    return fold_rows_per_api(notices, frozenset({NO_NPU_COUNTERPART, probe}), done.migrated)
