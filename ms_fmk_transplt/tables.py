"""Loads the built-in rule tables from ``rules/`` (data, not code)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ms_fmk_transplt.unsupported_table import UnsupportedTable


def rules_dir() -> Path:
    """The rules folder: inside the installed package, or at the top of a source checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "rules", here.parent / "rules"):
        if (candidate / "interface_table.json").is_file():
            return candidate
    raise FileNotFoundError(
        "rules/interface_table.json not found next to the ms_fmk_transplt package"
    )


@dataclass(frozen=True)
class NamespaceRow:
    cuda: str
    npu: str
    rule: str
    members: frozenset[str] | None  # allowed sub-names (e.g. torch.cuda.amp.<member>), None = any


@dataclass(frozen=True, eq=False)  # compared and hashed by identity (cached per table)
class Tables:
    raw: dict[str, Any]
    rows: tuple[NamespaceRow, ...]
    npu_names: frozenset[str]
    npu_amp_names: frozenset[str]
    torch_npu_version: str
    device_literal: re.Pattern[str]
    int_identifiers: frozenset[str]
    int_sequences: frozenset[str]
    int_calls: frozenset[str]
    foreign_roots: frozenset[str]
    unsupported: UnsupportedTable
    similar: dict[str, dict[str, Any]]  # -sim table: api -> entry

    @property
    def caveat_rules(self) -> set[str]:
        """Rules whose changes carry a caveat (heuristics and similar-API replacements)."""
        return set(self.unsupported.caveat_rules) | {e["rule"] for e in self.similar.values()}

    def section(self, name: str) -> dict[str, Any]:
        return self.raw[name]

    def lookup_cuda(self, qualified: str) -> tuple[str, str] | None:
        """Map a ``torch.cuda...`` qualified name to ``(npu qualified name, rule id)``.

        ``None`` when torch_npu has no counterpart (the caller leaves the code alone and warns).
        """
        ns = self.raw["cuda_namespace"]
        prefix = ns["from"]
        if qualified == prefix:
            return ns["to"], ns["fallback_rule"]
        if not qualified.startswith(prefix + "."):
            return None
        best: NamespaceRow | None = None
        for row in self.rows:
            if qualified == row.cuda or qualified.startswith(row.cuda + "."):
                if best is None or len(row.cuda) > len(best.cuda):
                    best = row
        if best is not None:
            rest = qualified[len(best.cuda) + 1 :]
            if rest and best.members is not None and rest.split(".")[0] not in best.members:
                return None
            return best.npu + qualified[len(best.cuda) :], best.rule
        member = qualified[len(prefix) + 1 :].split(".")[0]
        if member in self.npu_names:
            return ns["to"] + qualified[len(prefix) :], ns["fallback_rule"]
        return None


def _load_json(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


@cache
def load_tables() -> Tables:
    base = rules_dir()
    raw = _load_json(base / "interface_table.json")
    names = _load_json(base / "torch_npu_names.json")
    member_sets = {
        "npu_amp_names": frozenset(names["npu_amp_names"]),
        "npu_names": frozenset(names["npu_names"]),
    }
    rows = tuple(
        NamespaceRow(
            cuda=row["cuda"],
            npu=row["npu"],
            rule=row["rule"],
            members=member_sets[row["members"]] if "members" in row else None,
        )
        for row in raw["cuda_namespace"]["rows"]
    )
    int_dev = raw["int_device"]
    return Tables(
        raw=raw,
        rows=rows,
        npu_names=member_sets["npu_names"],
        npu_amp_names=member_sets["npu_amp_names"],
        torch_npu_version=names.get("torch_npu_version", ""),
        device_literal=re.compile(raw["device_strings"]["literal_pattern"]),
        int_identifiers=frozenset(int_dev["identifiers"]),
        int_sequences=frozenset(int_dev["sequences"]),
        int_calls=frozenset(int_dev["calls"]),
        foreign_roots=frozenset(raw["foreign_cuda_roots"]["roots"]),
        unsupported=UnsupportedTable(_load_json(base / "unsupported_api.json")),
        similar={e["api"]: e for e in _load_json(base / "similar_api.json")["entries"]},
    )
