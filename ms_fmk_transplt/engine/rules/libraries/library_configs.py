"""Libraries named in config files (rule ``libraries.cuda_only``): a training recipe that picks a
CUDA-only part of a library by name runs it as surely as an import does. torchtune's
``_component_: bitsandbytes.optim.PagedAdamW8bit`` (and Hydra's ``_target_``, jsonargparse's
``class_path``), and transformers' optimizer names (``optim: paged_adamw_8bit`` in
LLaMA-Factory's recipes, ``optimizer: adamw_bnb_8bit`` in axolotl's, which hands it to
``TrainingArguments.optim``), and the settings of a library argument that applies to any of its
calls (``attn_implementation: kernels-community/vllm-flash-attn3``, a kernel from the Hub; in a
JSON file only a key of the top-level object: a test's recorded reference that nests the run's
arguments is no recipe). One row per file listing the lines, plain text matching of the lines as
engine/rules/unsupported/launch_values.py does for cuda / nccl values (its caller,
run/tree_migration.py, asks both)."""

from __future__ import annotations

import json
import re

from ms_fmk_transplt.engine.rules.libraries.library_rows import CUDA_ONLY, THIRD_PARTY
from ms_fmk_transplt.events import Notice, Severity
from ms_fmk_transplt.tables.library_table import Argument
from ms_fmk_transplt.tables.unsupported_table import Entry, UnsupportedTable

CONFIG_SUFFIXES = frozenset({".yaml", ".yml", ".json", ".toml"})
SHOWN = 4  # settings named in a row's message
# `_component_: bitsandbytes.optim.PagedAdamW8bit`, `"_target_": "bitsandbytes.optim.Adam8bit"`
_COMPONENT = re.compile(
    r"""^\s*(?:-\s*)?["']?(?:_component_|_target_|class_path)["']?\s*[:=]\s*["']?"""
    r"""([A-Za-z_]\w*(?:\.\w+)+)["']?\s*,?\s*(?:#.*)?$"""
)
# `optim: paged_adamw_8bit`, `"optimizer": "adamw_bnb_8bit"`, `optim = "lion_8bit"`
_OPTIMIZER = re.compile(
    r"""^\s*["']?(optim|optimizer)["']?\s*[:=]\s*["']?([\w-]+)["']?\s*,?\s*(?:#.*)?$"""
)
# `attn_implementation: kernels-community/vllm-flash-attn3`, `"attn_implementation": "..."`
_SETTING = re.compile(r"""^\s*["']?(\w+)["']?\s*[:=]\s*["']?([^\s"',#]+)["']?\s*,?\s*(?:#.*)?$""")
OPTIMIZER_KEYWORD = "optim"  # the TrainingArguments argument whose values the table lists
OPTIMIZER_KEYS = frozenset({"optim", "optimizer"})  # axolotl's recipes say optimizer


def config_notice(rel: str, data: bytes, suffix: str, table: UnsupportedTable) -> Notice | None:
    """One row for a config file naming a CUDA-only library part (a bitsandbytes optimizer),
    or None."""
    if suffix not in CONFIG_SUFFIXES:
        return None
    names = optimizer_names(table)
    settings = setting_arguments(table)
    if b"bitsandbytes" not in data and not any(n.encode() in data for n in [*names, *settings]):
        return None
    text = data.decode("utf-8", "replace")
    top = _top_level(text) if suffix == ".json" else None
    found: list[tuple[int, str, Entry]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        hit = _line_entry(line, names, table) or _setting_entry(line, settings, top)
        if hit is not None:
            found.append((number, *hit))
    if not found:
        return None
    shown = ", ".join(f"{setting} (line {n})" for n, setting, _ in found[:SHOWN])
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    tips = list(dict.fromkeys(entry.tip for _, _, entry in found))
    return Notice(
        rel,
        found[0][0],
        CUDA_ONLY,
        Severity.WARNING,
        f"{len(found)} setting(s) name a CUDA-only library part: {shown}{more}; left unchanged",
        api=found[0][2].key,
        category=THIRD_PARTY,
        action="manual",
        tip=" | ".join(tips),
        end_line=found[-1][0],
    )


def optimizer_names(table: UnsupportedTable) -> dict[str, Entry]:
    """The optimizer names of a CUDA-only library, by name: the manual values of
    ``TrainingArguments.optim`` in the library table."""
    libraries = table.libraries
    names: dict[str, Entry] = {}
    for argument in libraries.arguments.get(OPTIMIZER_KEYWORD, ()):
        if argument.action != "manual":
            continue
        root = libraries.by_name[argument.library].roots[0]
        for value in argument.values:
            names[value] = Entry(f"{root}: optim={value!r}", THIRD_PARTY, "manual", argument.tip)
    return names


def _line_entry(
    line: str, names: dict[str, Entry], table: UnsupportedTable
) -> tuple[str, Entry] | None:
    """The setting of one line and its entry, if it names a CUDA-only library part."""
    component = _COMPONENT.match(line)
    if component is not None:
        dotted = component.group(1)
        if table.libraries.library_of(dotted) is None:
            return None
        entry = table.module(dotted)
        if entry is None or entry.action != "manual":
            return None
        return line.strip(), Entry(dotted, THIRD_PARTY, "manual", entry.tip)
    optimizer = _OPTIMIZER.match(line)
    if optimizer is not None and optimizer.group(2) in names:
        return line.strip(), names[optimizer.group(2)]
    return None


def setting_arguments(table: UnsupportedTable) -> dict[str, list[tuple[str, Argument]]]:
    """The manual arguments of a library that apply to any of its calls and select by value
    (``attn_implementation``: flash_attention_3, a Hub kernel), by keyword, with the library's
    top-level module."""
    libraries = table.libraries
    settings: dict[str, list[tuple[str, Argument]]] = {}
    for keyword, arguments in libraries.arguments.items():
        for argument in arguments:
            if argument.action == "manual" and not argument.calls:
                if argument.values or argument.pattern:
                    root = libraries.by_name[argument.library].roots[0]
                    settings.setdefault(keyword, []).append((root, argument))
    return settings


def setting_entry(
    keyword: str, value: object, settings: dict[str, list[tuple[str, Argument]]]
) -> Entry | None:
    """The entry of ``keyword=value`` if one of the arguments selects a CUDA-only path by it."""
    for root, argument in settings.get(keyword, ()):
        if argument.matches(value):
            return Entry(f"{root}: {keyword}={value!r}", THIRD_PARTY, "manual", argument.tip)
    return None


def _setting_entry(
    line: str, settings: dict[str, list[tuple[str, Argument]]], top: dict[str, object] | None
) -> tuple[str, Entry] | None:
    setting = _SETTING.match(line)
    if setting is None:
        return None
    keyword, value = setting.groups()
    if top is not None and top.get(keyword) != value:
        return None  # JSON: a key nested below the top-level object
    entry = setting_entry(keyword, value, settings)
    return None if entry is None else (line.strip(), entry)


def _top_level(text: str) -> dict[str, object]:
    """The keys of a JSON file's top-level object (none when it is no object)."""
    try:
        document = json.loads(text)
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}
