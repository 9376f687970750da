"""rules/deps_analysis.json: what ``--deps`` reads in the installed libraries a project calls
(the packages it does not analyse; the torch.cuda APIs that answer "is there CUDA?", do
nothing, or switch themselves off on a machine without CUDA)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

from ms_fmk_transplt.tables import rules_dir

FILE = "deps_analysis.json"
_SECTIONS = ("not_analysed", "probes", "no_op_without_cuda", "disabled_without_cuda")


@dataclass(frozen=True)
class DepsTable:
    not_analysed: frozenset[str]  # top-level package names
    probes: frozenset[str]  # dotted APIs: "is there CUDA?" (not a CUDA use themselves)
    no_ops: frozenset[str]  # dotted APIs that do nothing without CUDA
    no_op_prefixes: tuple[str, ...]  # "torch.backends.": every API below it
    disabled: MappingProxyType[str, str]  # dotted API -> what happens without CUDA


def parse_deps_table(data: Any) -> DepsTable:
    """The table from its JSON (raises ValueError naming the section that is malformed)."""
    if type(data) is not dict:
        raise ValueError(f"rules/{FILE}: not a JSON object")
    for section in _SECTIONS:
        value = data.get(section)
        if type(value) is not dict or not all(
            type(k) is str and type(v) is str and k and v for k, v in value.items()
        ):
            raise ValueError(f"rules/{FILE}: {section} must map names to reasons")
    return DepsTable(
        frozenset(data["not_analysed"]),
        frozenset(data["probes"]),
        frozenset(k for k in data["no_op_without_cuda"] if not k.endswith(".")),
        tuple(sorted(k for k in data["no_op_without_cuda"] if k.endswith("."))),
        MappingProxyType(dict(data["disabled_without_cuda"])),
    )


@cache
def load_deps_table() -> DepsTable:
    with open(rules_dir() / FILE, encoding="utf-8") as f:
        return parse_deps_table(json.load(f))
