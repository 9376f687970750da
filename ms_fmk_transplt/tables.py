"""Loads the built-in rule tables from ``rules/`` (data, not code)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ms_fmk_transplt.table_sections import (
    AmpTable,
    DeviceStringsTable,
    DistributedModeTable,
    DistributedTable,
    ImportsTable,
    IntDeviceTable,
    ParseTable,
    ProfilerTable,
    SpecifyDeviceTable,
    TensorMethodsTable,
    sections,
)
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
    """The built-in tables; each section of interface_table.json as a typed view
    (ms_fmk_transplt/table_sections.py)."""

    raw: dict[str, Any]
    rows: tuple[NamespaceRow, ...]
    npu_names: frozenset[str]
    npu_amp_names: frozenset[str]
    torch_npu_version: str
    foreign_roots: frozenset[str]
    unsupported: UnsupportedTable
    similar: dict[str, dict[str, Any]]  # -sim table: api -> entry
    imports: ImportsTable
    tensor_methods: TensorMethodsTable
    device_strings: DeviceStringsTable
    int_device: IntDeviceTable
    amp: AmpTable
    distributed: DistributedTable
    profiler: ProfilerTable
    parse: ParseTable
    specify_device: SpecifyDeviceTable
    distributed_mode: DistributedModeTable
    cuda_unsupported_rule: str  # device_api.no_npu_counterpart

    @property
    def caveat_rules(self) -> set[str]:
        """Rules whose changes carry a caveat (heuristics and similar-API replacements)."""
        return set(self.unsupported.caveat_rules) | {e["rule"] for e in self.similar.values()}

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
    return Tables(
        raw=raw,
        rows=rows,
        npu_names=member_sets["npu_names"],
        npu_amp_names=member_sets["npu_amp_names"],
        torch_npu_version=names.get("torch_npu_version", ""),
        foreign_roots=frozenset(raw["foreign_cuda_roots"]["roots"]),
        unsupported=UnsupportedTable(_load_json(base / "unsupported_api.json")),
        similar={e["api"]: e for e in _load_json(base / "similar_api.json")["entries"]},
        cuda_unsupported_rule=raw["cuda_namespace"]["unsupported_rule"],
        **sections(raw),
    )
