"""What the target torch_npu version documents about plain PyTorch code: operator support
(rules/operator_support/<X.Y.Z>.json, one per documented version) and NPU advice
(rules/advice.json). Typed views of the data; engine/target_scan.py finds the uses."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUPPORT_DIR = "operator_support"


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@dataclass(frozen=True)
class OperatorEntry:
    api: str
    category: str  # unsupported_op | restricted_op
    tip: str  # in English
    keywords: frozenset[str]  # restricted_op: reported only when a call passes one of these
    tip_original: str = ""  # the list's own (Chinese) wording, when the tip translates it


class OperatorTable:
    """The operator-support list used for a target version: its own, else the nearest older
    documented one, else the oldest (``document_version`` says which)."""

    def __init__(self, raw: dict[str, Any] | None, target: str) -> None:
        self.target = target
        self.document_version = raw["document_version"] if raw else ""
        self.source = raw["source"] if raw else ""
        # said once per run (the log, the workbook's Summary), not in every row's tip
        self.note = ""
        if raw and self.document_version != target:
            self.note = f"no public list for {target}: the {self.document_version} list is used"
        self.entries: dict[str, OperatorEntry] = {}
        for e in raw["entries"] if raw else []:
            self.entries[e["api"]] = OperatorEntry(
                e["api"],
                e["category"],
                e["tip"],
                frozenset(e.get("keywords", ())),
                e.get("tip_original", ""),
            )
        self.leaves = frozenset(api.rsplit(".", 1)[-1] for api in self.entries)

    def entry(self, qualified: str) -> OperatorEntry | None:
        return self.entries.get(qualified)


def load_operator_table(rules: Path, target: str) -> OperatorTable:
    folder = rules / SUPPORT_DIR
    documented = sorted((p.stem for p in folder.glob("*.json")), key=version_key)
    if not documented:
        return OperatorTable(None, target)
    older = [v for v in documented if version_key(v) <= version_key(target)]
    chosen = older[-1] if older else documented[0]
    with (folder / f"{chosen}.json").open(encoding="utf-8") as fh:
        return OperatorTable(json.load(fh), target)


@dataclass(frozen=True)
class AdviceEntry:
    id: str  # the rule id of its rows
    kind: str  # performance | precision | environment
    apis: frozenset[str]  # qualified names that trigger it
    pattern: str  # or a code pattern engine/target_scan.py detects
    replacement: dict[str, str]
    advice: str
    effect: str
    documented: str
    needs: tuple[str, ...]  # torch_npu names it relies on


@dataclass(frozen=True)
class EnvironmentEntry:
    cuda: str
    ascend: str
    exact: bool  # same meaning and values: rewritten where used as an environment key
    caveat: str
    documented: str


class AdviceTable:
    def __init__(self, raw: dict[str, Any]) -> None:
        self.kinds: dict[str, str] = raw.get("kinds", {})
        self.entries = tuple(_advice_entry(e) for e in raw.get("entries", ()))
        self.by_id = {e.id: e for e in self.entries}
        self.by_api: dict[str, AdviceEntry] = {}
        for entry in self.entries:
            for api in sorted(entry.apis):
                self.by_api.setdefault(api, entry)
        self.by_pattern: dict[str, tuple[AdviceEntry, ...]] = {}
        for entry in self.entries:
            if entry.pattern:
                self.by_pattern[entry.pattern] = (*self.by_pattern.get(entry.pattern, ()), entry)
        self.environment = {
            e["cuda"]: EnvironmentEntry(
                e["cuda"], e["ascend"], bool(e["exact"]), e.get("caveat", ""), e["documented"]
            )
            for e in raw.get("environment", ())
        }
        self.exact_environment = {k: e for k, e in self.environment.items() if e.exact}
        self.leaves = frozenset(api.rsplit(".", 1)[-1] for api in self.by_api)


def _advice_entry(raw: dict[str, Any]) -> AdviceEntry:
    trigger = raw.get("trigger", {})
    needs = raw.get("needs", ())
    return AdviceEntry(
        id=raw["id"],
        kind=raw["kind"],
        apis=frozenset(trigger.get("apis", ())),
        pattern=trigger.get("pattern", ""),
        replacement=dict(raw.get("replacement", {})),
        advice=raw["advice"],
        effect=raw.get("effect", ""),
        documented=raw.get("documented", ""),
        needs=tuple([needs] if isinstance(needs, str) else needs),
    )


def load_advice_table(rules: Path) -> AdviceTable:
    path = rules / "advice.json"
    if not path.is_file():
        return AdviceTable({})
    with path.open(encoding="utf-8") as fh:
        return AdviceTable(json.load(fh))
