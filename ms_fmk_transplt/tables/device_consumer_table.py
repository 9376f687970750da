"""The table of non-torch device consumers (rules/device_consumers.json): calls of other
libraries that take a device or a CUDA switch of their own (faster-whisper's
``WhisperModel(device=)``, CTranslate2, onnxruntime's ``providers=``, mergekit's
``MergeOptions(cuda=)``). Their ``"cuda"`` is not a torch device: rule
device_strings.non_torch_consumer leaves it as written and reports what to do on Ascend.

Each entry names the public source (and the version) its facts were read at;
``shape_problems`` is the check (scripts/check_device_consumers.py runs it, and the table does
not load with a problem).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

VERSION = re.compile(r"\d+\.\d+")
ACTIONS = frozenset({"manual", "caveat"})
REQUIRED = ("library", "calls", "argument", "accepts", "action", "ascend", "source")


@dataclass(frozen=True)
class Consumer:
    """One call of a non-torch library and the parameter through which it takes a device."""

    library: str
    calls: tuple[str, ...]  # qualified names, as imported
    argument: str  # the parameter: device, providers, cuda
    position: int | None  # its index among the positional arguments (None: keyword only)
    values: tuple[str, ...]  # the strings that select CUDA ("cuda" covers "cuda:N")
    flag: bool  # a CUDA switch: any value but a False/None constant selects CUDA
    accepts: str
    action: str  # for a CUDA value written in the call
    ascend: str  # what to do on an Ascend host
    source: str

    def selects_cuda(self, text: str) -> bool:
        """Whether a string given to the parameter selects CUDA."""
        return any(
            text == v or (v == "cuda" and re.fullmatch(r"cuda:\d+", text)) for v in self.values
        )


def shape_problems(raw: dict[str, Any]) -> list[str]:
    """What is wrong with the table's shape: one line per problem."""
    problems: list[str] = []
    owner: dict[str, str] = {}
    for entry in raw.get("consumers", []):
        name = entry.get("library", "?")
        missing = [key for key in REQUIRED if not entry.get(key)]
        if missing:
            problems.append(f"{name}: needs {', '.join(missing)}")
        if not VERSION.search(entry.get("source", "")) or "://" not in entry.get("source", ""):
            problems.append(f"{name}: source names no public address and version it was read at")
        if entry.get("action") not in ACTIONS:
            problems.append(f"{name}: action must be manual or caveat")
        if bool(entry.get("flag")) == bool(entry.get("values")):
            problems.append(f"{name}: give values (strings that select CUDA) or flag, not both")
        position = entry.get("position")
        if position is not None and (type(position) is not int or position < 0):
            problems.append(f"{name}: position must be a positional index")
        for call in entry.get("calls", []):
            if "." not in call:
                problems.append(f"{name}: call {call} is not a qualified name")
            if owner.setdefault(call, name) != name:
                problems.append(f"{name}: call {call} also listed by {owner[call]}")
    if not raw.get("consumers"):
        problems.append("lists no consumer")
    return problems


class DeviceConsumerTable:
    def __init__(self, raw: dict[str, Any]) -> None:
        problems = shape_problems(raw)
        if problems:
            raise ValueError("rules/device_consumers.json: " + "; ".join(problems))
        self.raw = raw
        self.consumers: tuple[Consumer, ...] = tuple(
            Consumer(
                entry["library"],
                tuple(entry["calls"]),
                entry["argument"],
                entry.get("position"),
                tuple(entry.get("values", ())),
                bool(entry.get("flag")),
                entry["accepts"],
                entry["action"],
                entry["ascend"],
                entry["source"],
            )
            for entry in raw["consumers"]
        )
        self.by_call: dict[str, Consumer] = {c: e for e in self.consumers for c in e.calls}
        self.leaves: frozenset[str] = frozenset(c.rsplit(".", 1)[-1] for c in self.by_call)
        # their top-level modules: a call is known through an import of one (and they are
        # anchor words of the span pass, engine/spans/anchors.py)
        self.roots: frozenset[str] = frozenset(c.split(".")[0] for c in self.by_call)
        self.words: tuple[bytes, ...] = tuple(sorted(w.encode() for w in self.roots))

    def named_in(self, source: bytes) -> bool:
        """Whether a file spells the module of a consumer (cheap; before any walk: "Encoder"
        or "Generator" alone are in many files that import no such library)."""
        return any(word in source for word in self.words)
