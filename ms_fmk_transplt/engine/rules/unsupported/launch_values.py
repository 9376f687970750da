"""Values passed to the code from outside it that still say cuda / nccl (rule
unsupported.launch_config, declared in engine/recorder.py with the other row categories): the
options of a command line in a Python string, and the settings of the launch scripts and config
files of the input (``run.sh``, ``config.yaml``), which are copied unchanged. Plain text
matching, no parsing: a row per command string and per file, listing what was found."""

from __future__ import annotations

import dataclasses
import re

from ms_fmk_transplt.engine.rules.unsupported.unsupported_rows import category_rule
from ms_fmk_transplt.events import Notice, Severity
from ms_fmk_transplt.tables.unsupported_table import (
    Entry,
    UnsupportedTable,
    is_command_line,
)

# launch scripts and config files whose values reach the code
SCRIPT_SUFFIXES = frozenset({".sh", ".bash", ".zsh", ".slurm", ".sbatch"})
CONFIG_SUFFIXES = frozenset({".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".conf"})
LAUNCH_SUFFIXES = SCRIPT_SUFFIXES | CONFIG_SUFFIXES
MAX_BYTES = 1 << 20  # larger files are data, not settings
SHOWN = 4  # settings named in a row's message
# `--dist-backend nccl`, `--device cuda:0`, `--backend=nccl`
_OPTION = re.compile(
    r"(?<![\w-])(--?[A-Za-z][\w.-]*)(\s+|=)[\"']?(cuda(?::\d+)?|nccl)[\"']?(?![\w:.-])"
)
# `--tf32 True`, `--tf32=1`, a bare `--tf32` flag (not `--tf32 False`)
_TF32_OPTION = re.compile(
    r"(?<![\w-])--tf32(?:(?:\s+|=)[\"']?(?:True|true|1)[\"']?(?![\w.-])"
    r"|(?=\s*(?:$|\\|--?[A-Za-z]|[\"'\]),;|&])))"
)
# `"tf32": true`, `tf32: True`, `tf32 = 1` (one setting per line)
_TF32_SETTING = re.compile(r"""^\s*-?\s*["']?tf32["']?\s*[:=]\s*["']?(true|True|1)["']?\s*,?\s*$""")
TF32_TIP = (
    "--tf32 / tf32: true: TF32 is an NVIDIA Ampere mode and HF TrainingArguments raises when "
    "it is asked for without CUDA: remove it or set it False on the NPU (the NPU's counterpart "
    "is HF32: torch.npu.matmul.allow_hf32 / torch.npu.conv.allow_hf32)"
)
# `device: cuda`, `"backend": "nccl"`, `device = "cuda"` (one setting per line)
_SETTING = re.compile(
    r"""^\s*-?\s*["']?([A-Za-z_][\w.-]*)["']?\s*[:=]\s*["']?(cuda(?::\d+)?|nccl)["']?\s*,?\s*$"""
)


def command_values(text: str) -> list[str]:
    """The options of a command line in a string that pass nccl, or cuda as a separate word
    (``--device cuda``; ``--device=cuda`` is migrated in place)."""
    if "cuda" not in text and "nccl" not in text and "--tf32" not in text:
        return []
    if not is_command_line(text):
        return []
    found = [
        m.group(0) for m in _OPTION.finditer(text) if m.group(3) == "nccl" or m.group(2) != "="
    ]
    return found + [m.group(0).strip() for m in _TF32_OPTION.finditer(text)]


def command_entry(values: list[str], table: UnsupportedTable) -> Entry:
    """The launch tip, and the tf32 tip where a value turns TF32 on."""
    return _with_tf32(table.launch_config, values, any(_is_tf32(v) for v in values))


def _is_tf32(value: str) -> bool:
    return value.startswith(("--tf32", "tf32"))


def _with_tf32(entry: Entry, values: list[str], tf32: bool) -> Entry:
    if not tf32:
        return entry
    if all(_is_tf32(v) for v in values):
        return dataclasses.replace(entry, tip=TF32_TIP)
    return dataclasses.replace(entry, tip=f"{entry.tip}; {TF32_TIP}")


def command_message(values: list[str]) -> str:
    return f"command line passes {', '.join(values)}; left unchanged"


def _uncommented(line: str) -> str:
    stripped = line.lstrip()
    if stripped.startswith(("#", "//", ";")):
        return ""
    cut = line.find(" #")
    return line if cut < 0 else line[:cut]


def _line_values(line: str, script: bool, table: UnsupportedTable) -> list[str]:
    line = _uncommented(line)
    found = _tf32_values(line)
    if "cuda" not in line and "nccl" not in line and "CUDA" not in line and "NCCL" not in line:
        return found
    found += [m.group(0) for m in _OPTION.finditer(line)]
    setting = _SETTING.match(line)
    if setting is not None and not found:
        found.append(f"{setting.group(1)}: {setting.group(2)}")
    if script:
        found += [f"{name}=" for name, _ in table.assigned_variables(line)]
    return found


def _tf32_values(line: str) -> list[str]:
    if "tf32" not in line:
        return []
    setting = _TF32_SETTING.match(line)
    if setting is not None:
        return [f"tf32: {setting.group(1)}"]
    return [m.group(0).strip() for m in _TF32_OPTION.finditer(line)]


def _entry(values: list[str], table: UnsupportedTable) -> Entry:
    """The row's action and tip: a variable's own (``CUDA_DEVICE_MAX_CONNECTIONS``: a caveat)
    where the file only sets variables, the launch tip for values (and with them)."""
    variables = {v[:-1]: table.environment(v[:-1]) for v in values if v.endswith("=")}
    own = [f"{name}: {e.tip}" for name, e in variables.items() if e is not None]
    entry = table.launch_config
    if any(_is_tf32(v) for v in values):
        plain = [v for v in values if not _is_tf32(v)]
        return _with_tf32(_entry(plain, table) if plain else entry, values, True)
    if len(variables) == len(values):  # only variables
        manual = any(e is not None and e.action == "manual" for e in variables.values())
        return dataclasses.replace(
            entry, action="manual" if manual else "caveat", tip="; ".join(own)
        )
    return dataclasses.replace(entry, tip="; ".join([entry.tip, *own]))


def file_notice(rel: str, data: bytes, suffix: str, table: UnsupportedTable) -> Notice | None:
    """One row for a launch script or config file that passes cuda / nccl values, or None."""
    words = (b"cuda", b"nccl", b"CUDA_", b"NCCL_", b"tf32")
    if len(data) > MAX_BYTES or not any(w in data for w in words):
        return None
    script = suffix in SCRIPT_SUFFIXES
    found: list[tuple[int, str]] = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        found.extend((number, value) for value in _line_values(line, script, table))
    if not found:
        return None
    entry = _entry([v for _, v in found], table)
    shown = ", ".join(f"{v} (line {n})" for n, v in found[:SHOWN])
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    what = "cuda / nccl / CUDA variables"
    if any(_is_tf32(v) for _, v in found):
        what += " / tf32"
    return Notice(
        rel,
        found[0][0],
        category_rule(table.launch_config.category),
        Severity.WARNING,
        f"{len(found)} setting(s) pass {what} to the code: {shown}{more}",
        api=shown + more,
        category=entry.category,
        action=entry.action,
        tip=entry.tip,
        end_line=found[-1][0],
    )
