"""Values passed to the code from outside it that still say cuda / nccl (rule
unsupported.launch_config, declared in engine/recorder.py with the other row categories): the
options of a command line in a Python string, and the settings of the launch scripts and config
files of the input (``run.sh``, ``config.yaml``), which are copied unchanged. Plain text
matching, no parsing: a row per command string and per file, listing what was found (in a
script also its reads of ``$CUDA_VISIBLE_DEVICES``).

The rows of CUDA / NCCL environment variables in Python code (unsupported.environment) are
sorted here too. A name in a message sets nothing (``print("FORCE_CUDA=1
TORCH_CUDA_ARCH_LIST=8.0 pip install .")``, ``raise RuntimeError("set CUDA_VISIBLE_DEVICES=0
...")``, an argparse ``help=``): the string reaches a print, a log, a warning, an exception or a
help text before any call that reads or sets the environment, so it is no row (``in_message``).
The ``NCCL_*`` settings of one function are one row listing them all (``merge_nccl_rows``): a
caveat unless one of them needs its HCCL counterpart set."""

from __future__ import annotations

import ast
import dataclasses
import json
import re

from ms_fmk_transplt.engine.rules.environment.environment_keys import ENVIRON, KEY_CALLS
from ms_fmk_transplt.engine.rules.family_spec import Finishing
from ms_fmk_transplt.engine.rules.libraries.library_rows import fold_groups
from ms_fmk_transplt.engine.rules.unsupported.unsupported_rows import category_rule
from ms_fmk_transplt.engine.spans.module_facts import ModuleFacts
from ms_fmk_transplt.engine.spans.shared_tree import tree_of
from ms_fmk_transplt.engine.spans.span_context import SpanContext
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
# the configuration of a CI service (its runners' matrix, `device: "cuda"`), not of the program:
# folders anywhere in the input, and files by name
CI_FOLDERS = frozenset({".github", ".gitlab", ".circleci", ".azure-pipelines", ".buildkite"})
CI_FILES = re.compile(r"^(\.gitlab-ci|azure-pipelines|\.travis)([.-][\w.-]*)?\.ya?ml$")
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
# a script that reads CUDA_VISIBLE_DEVICES (`${CUDA_VISIBLE_DEVICES:-0}`, `"$CUDA_VISIBLE_DEVICES"`)
# builds its device list from it: unset on an NPU host, the list collapses to its default
_READ = re.compile(r"\$\{?#?(CUDA_VISIBLE_DEVICES)\b")


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
        found += [f"${name}" for name in _READ.findall(line)]
    return found


def _variable(value: str) -> str | None:
    """The variable a found value sets (``NAME=``) or reads (``$NAME``), else None."""
    if value.endswith("="):
        return value[:-1]
    return value[1:] if value.startswith("$") else None


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
    names = [name for name in map(_variable, values) if name is not None]
    variables = {name: table.environment(name) for name in names}
    own = [f"{name}: {e.tip}" for name, e in variables.items() if e is not None]
    entry = table.launch_config
    if any(_is_tf32(v) for v in values):
        plain = [v for v in values if not _is_tf32(v)]
        return _with_tf32(_entry(plain, table) if plain else entry, values, True)
    written = [v for v in values if not v.startswith("$")]  # reads ($NAME) are variables too
    if len({v for v in written if v.endswith("=")}) == len(written):  # only variables
        manual = any(e is not None and e.action == "manual" for e in variables.values())
        return dataclasses.replace(
            entry, action="manual" if manual else "caveat", tip="; ".join(own)
        )
    return dataclasses.replace(entry, tip="; ".join([entry.tip, *own]))


def ci_config(rel: str) -> bool:
    """Whether a file of the input configures a CI service (``.github/workflows/test.yml``,
    ``.gitlab-ci.yml``, ``.circleci/config.yml``, ``azure-pipelines.yml``): no launch setting."""
    *folders, name = rel.split("/")
    return bool(CI_FOLDERS.intersection(folders)) or CI_FILES.match(name) is not None


def file_notice(rel: str, data: bytes, suffix: str, table: UnsupportedTable) -> Notice | None:
    """One row for a launch script or config file that passes cuda / nccl values, or None (a
    CI service's configuration passes nothing to the program: none)."""
    words = (b"cuda", b"nccl", b"CUDA_", b"NCCL_", b"tf32")
    if len(data) > MAX_BYTES or not any(w in data for w in words) or ci_config(rel):
        return None
    script = suffix in SCRIPT_SUFFIXES
    found: list[tuple[int, str]] = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        found.extend((number, value) for value in _line_values(line, script, table))
    if not found or kernel_metadata(rel, data):
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


def kernel_metadata(rel: str, data: bytes) -> bool:
    """A kernel's build metadata (a Hugging Face kernels-hub ``metadata.json``: ``"backend":
    {"type": "cuda"}`` says what the kernel was built for): no program reads it as a setting."""
    if rel.rsplit("/", 1)[-1] != "metadata.json":
        return False
    try:
        meta = json.loads(data)
    except ValueError:
        return False
    backend = meta.get("backend") if isinstance(meta, dict) else None
    return isinstance(backend, dict) and isinstance(backend.get("type"), str)


# calls whose string arguments are text shown to people
MESSAGE_CALLS = frozenset({"builtins.print", "warnings.warn", "logging.log"})
# methods of a logger (or of the logging module) that print their message
LOG_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "critical", "exception", "fatal"}
)
# keyword arguments that are help texts (argparse, click)
TEXT_KEYWORDS = frozenset({"help", "description", "epilog", "usage"})
NCCL_PREFIXES = ("NCCL_", "TORCH_NCCL_")
ENVIRONMENT = "environment"


def in_message(ctx: SpanContext, node: ast.AST) -> bool:
    """Whether a string is text of a message: it reaches a print, a log call, a warning, an
    exception raised or asserted, or a help text before it reaches the environment
    (``os.environ[...]``, ``os.getenv(...)``) or any other statement."""
    child, parent = node, ctx.parent(node)
    while parent is not None and not isinstance(parent, ast.stmt):
        if isinstance(parent, ast.keyword) and parent.arg in TEXT_KEYWORDS:
            return True
        if isinstance(parent, ast.Subscript) and ctx.qname(parent.value) == ENVIRON:
            return False
        if isinstance(parent, ast.Call) and child is not parent.func:
            name = ctx.qname(parent.func) or ""
            if name in KEY_CALLS:
                return False
            if name in MESSAGE_CALLS or ctx.last_name(parent.func) in LOG_METHODS:
                return True
        child, parent = parent, ctx.parent(parent)
    if isinstance(parent, ast.Raise):
        return child is parent.exc
    return isinstance(parent, ast.Assert) and child is parent.msg


def removed_name(ctx: SpanContext, node: ast.AST, removing: set[str] | None = None) -> bool:
    """Whether a string is one of a list of variables the code removes (``for k in
    ["NCCL_DEBUG_FILE", ...]: os.environ.pop(k, None)``, or a tuple assigned to a name such a
    loop iterates; ``removing``: the names the file's loops remove by, once computed): it sets
    nothing."""
    container = ctx.parent(node)
    if not isinstance(container, (ast.List, ast.Tuple, ast.Set)):
        return False
    holder = ctx.parent(container)
    if isinstance(holder, ast.For) and holder.iter is container:
        return _removes(holder)
    if not isinstance(holder, (ast.Assign, ast.AnnAssign)) or holder.value is not container:
        return False
    targets = holder.targets if isinstance(holder, ast.Assign) else [holder.target]
    if len(targets) != 1 or not isinstance(targets[0], ast.Name):
        return False
    if removing is None:
        removing = removing_loops(ctx.source.data)
    return targets[0].id in removing


def removing_loops(source: bytes) -> set[str]:
    """The names of the lists the file's loops remove variables by (``for k in NAMES:
    os.environ.pop(k)``)."""
    try:
        tree = tree_of(source)
    except (SyntaxError, ValueError):
        return set()
    return {
        n.iter.id
        for n in ast.walk(tree)
        if isinstance(n, ast.For) and isinstance(n.iter, ast.Name) and _removes(n)
    }


def _removes(loop: ast.For) -> bool:
    """Whether a loop's body removes its variable from a mapping (``env.pop(k, None)``, ``del
    os.environ[k]``, ``os.unsetenv(k)``)."""
    if not isinstance(loop.target, ast.Name):
        return False
    name = loop.target.id
    for node in (n for statement in loop.body for n in ast.walk(statement)):
        if isinstance(node, ast.Call) and node.args and _is_name(node.args[0], name):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("pop", "unsetenv"):
                return True
        if isinstance(node, ast.Delete) and any(
            isinstance(t, ast.Subscript) and _is_name(t.slice, name) for t in node.targets
        ):
            return True
    return False


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _is_nccl_row(notice: Notice) -> bool:
    return (
        notice.category == ENVIRONMENT
        and notice.api.startswith(NCCL_PREFIXES)
        and notice.action in ("manual", "caveat")
    )


def _function_spans(source: bytes) -> list[tuple[int, int]] | None:
    try:
        tree = tree_of(source)  # the span pass's own tree when it has the whole file
    except (SyntaxError, ValueError):
        return None
    return [
        (n.lineno, n.end_lineno or n.lineno)
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def _function_of(line: int, spans: list[tuple[int, int]]) -> int:
    """The first line of the innermost function holding ``line`` (0: module level)."""
    inside = [start for start, end in spans if start <= line <= end]
    return max(inside, default=0)


def merge_nccl_rows(notices: list[Notice], source: bytes) -> list[Notice]:
    """One row for the NCCL settings of each function (and one for the module level): its lines
    span them all, its action is manual when one of them needs its HCCL counterpart set."""
    rows = [n for n in notices if _is_nccl_row(n)]
    if len(rows) < 2:
        return notices
    spans = _function_spans(source)
    if spans is None:
        return notices
    groups: dict[int, list[Notice]] = {}
    for row in rows:
        groups.setdefault(_function_of(row.line, spans), []).append(row)
    return fold_groups(notices, groups.items(), lambda where, g: _merged(g, where), by_line=False)


def _merged(rows: list[Notice], function_line: int) -> Notice:
    rows = sorted(rows, key=lambda n: (n.line, n.end_line))
    tips: dict[str, str] = {}
    for row in rows:
        tips.setdefault(row.api, row.tip)
    names = ", ".join(tips)
    where = "this function" if function_line else "module level"
    manual = any(row.action == "manual" for row in rows)
    return dataclasses.replace(
        rows[0],
        end_line=max(row.end_line or row.line for row in rows),
        api=names,
        message=f"{len(tips)} NCCL settings in {where} ({names}); left unchanged",
        action="manual" if manual else "caveat",
        tip="; ".join(f"{', '.join(named)}: {tip}" for tip, named in _by_tip(tips).items()),
    )


def _by_tip(tips: dict[str, str]) -> dict[str, list[str]]:
    """The names of each tip, in order: a tip shared by several settings is given once."""
    named: dict[str, list[str]] = {}
    for name, tip in tips.items():
        named.setdefault(tip, []).append(name)
    return named


def finish(ctx: SpanContext, facts: ModuleFacts, done: Finishing) -> None:
    """The family's finishing step (Family.finish): the NCCL settings merged (merge_nccl_rows)."""
    ctx.notices[:] = merge_nccl_rows(ctx.notices, done.source)
