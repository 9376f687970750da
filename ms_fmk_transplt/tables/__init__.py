"""Loads the built-in rule tables from ``rules/`` (data, not code)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ms_fmk_transplt.tables.device_consumer_table import DeviceConsumerTable
from ms_fmk_transplt.tables.library_table import LibraryTable
from ms_fmk_transplt.tables.table_sections import (
    AmpTable,
    DeviceStringsTable,
    DistributedModeTable,
    DistributedTable,
    ImportsTable,
    IntDeviceTable,
    ProfilerTable,
    SpecifyDeviceTable,
    TensorMethodsTable,
    sections,
)
from ms_fmk_transplt.tables.target_tables import (
    AdviceTable,
    OperatorTable,
    load_advice_table,
    load_operator_table,
    version_key,
)
from ms_fmk_transplt.tables.tf_migration_table import TfMigrationTable, load_tf_migration
from ms_fmk_transplt.tables.unsupported_table import Entry, UnsupportedTable

if TYPE_CHECKING:
    from ms_fmk_transplt.tables.tf_adapter_table import TfAdapterTable

NAMES_DIR = "torch_npu_names"  # rules/torch_npu_names/<X.Y.Z>.json: one per torch_npu version


def rules_dir() -> Path:
    """The rules folder: inside the installed package, or at the top of a source checkout."""
    here = Path(__file__).resolve().parent.parent  # the package (installed) or the repository
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
    (ms_fmk_transplt/tables/table_sections.py)."""

    raw: dict[str, Any]
    rows: tuple[NamespaceRow, ...]
    npu_names: frozenset[str]
    npu_amp_names: frozenset[str]
    torch_npu_version: str  # the target: the version of the torch_npu name table in use
    # (version, torch.npu names every release has, {name: first post release}) of later lines
    newer_names: tuple[tuple[str, frozenset[str], dict[str, str]], ...]
    later_posts: dict[str, str]  # torch.npu names only later post releases of the target have
    target_names: dict[str, frozenset[str]]  # torch_npu.optim / torch_npu functions of it
    operators: OperatorTable  # what its documentation says of PyTorch APIs
    advice: AdviceTable
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
    specify_device: SpecifyDeviceTable
    distributed_mode: DistributedModeTable
    tf_migration: TfMigrationTable  # rules/tf_migration.json: the TensorFlow migration
    device_consumers: DeviceConsumerTable  # rules/device_consumers.json: non-torch devices

    @cached_property
    def tf_adapter(self) -> TfAdapterTable:
        """The Ascend TensorFlow adapter's options and support lists (rules/tf_adapter.json, the
        largest table), read and checked on first use: only TensorFlow code and --npu-option
        ask for it, so a run or a --check of PyTorch code never reads it."""
        return _tf_adapter()

    def cuda_entry(self, qualified: str) -> Entry:
        """The row for a ``torch.cuda`` name left alone: the table's tip, or, for a name a newer
        torch_npu has, the version it needs."""
        member = qualified.split(".")[2] if qualified.count(".") >= 2 else ""
        needs = self.later_posts.get(member)  # a later post release of the target line
        for version, names, later in self.newer_names if needs is None else ():
            if member in names or member in later:
                needs = version if member in names else later[member]
                break
        if needs is None or member in self.npu_names:
            return self.unsupported.cuda(qualified)
        return Entry(
            qualified,
            "version_gap",
            "manual",
            f"torch.npu.{member} needs torch_npu >= {needs} (this migration targets "
            f"{self._target_releases()}, set with -v): upgrade torch_npu, or remove the call",
        )

    def _target_releases(self) -> str:
        version = self.torch_npu_version
        return version if ".post" in version else f"every {version} release"

    def target_has(self, name: str) -> bool:
        """Whether the target torch_npu provides ``name`` (``torch.npu.X``,
        ``torch_npu.optim.X``, ``torch_npu.X``); True where its table does not say."""
        for prefix, key in (
            ("torch.npu.", "npu_names"),
            ("torch_npu.npu.", "npu_names"),
            ("torch_npu.optim.", "optim_names"),
            ("torch_npu.", "npu_functions"),  # operator functions: torch_npu.npu_rms_norm
        ):
            rest = name[len(prefix) :]
            if name.startswith(prefix) and (key != "npu_functions" or "." not in rest):
                names = self.target_names.get(key)
                return names is None or rest.split(".")[0] in names
        return True

    def lookup_cuda_import(self, qualified: str) -> tuple[str, str] | None:
        """``lookup_cuda`` for a name an import statement binds: only a counterpart with the
        same name (``from torch.npu import CUDAGraph`` would not exist; the name stays on
        torch.cuda and is reported)."""
        return _same_leaf(qualified, self.lookup_cuda(qualified))

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
            member = best.npu.split(".")[2] if best.npu.count(".") >= 2 else ""
            if member and member not in self.npu_names:
                return None  # e.g. torch.npu.NPUGraph: only from some torch_npu version on
            return best.npu + qualified[len(best.cuda) :], best.rule
        member = qualified[len(prefix) + 1 :].split(".")[0]
        if member in self.npu_names:
            return ns["to"] + qualified[len(prefix) :], ns["fallback_rule"]
        return None


def _same_leaf(qualified: str, mapped: tuple[str, str] | None) -> tuple[str, str] | None:
    """``mapped`` when the torch.cuda member keeps its name under torch.npu."""
    if mapped is None:
        return None
    old, new = qualified.split("."), mapped[0].split(".")
    return mapped if len(old) < 3 or (len(new) > 2 and old[2] == new[2]) else None


def _load_json(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
        return data


@cache
def known_versions() -> tuple[str, ...]:
    """The torch_npu versions with a name table, oldest first."""
    names = [p.stem for p in (rules_dir() / NAMES_DIR).glob("*.json")]
    return tuple(sorted(names, key=version_key))


def resolve_version(text: str) -> str:
    """The table version for what the user wrote after -v: ``2.1.0``, a wheel's
    ``2.1.0.post17`` or ``2.1``; ValueError naming the choices otherwise."""
    versions = known_versions()
    wanted = text.strip().lower().lstrip("v")
    base = wanted.split(".post")[0].split("+")[0]
    post = re.fullmatch(r"[^+]*\.post(\d+)(\+.*)?", wanted)
    if base in versions:  # a post release given explicitly targets that release's names
        return f"{base}.post{int(post.group(1))}" if post else base
    matches = [v for v in versions if v.startswith(base + ".")]
    if base.count(".") == 1 and len(matches) == 1:
        return matches[0]
    raise ValueError(
        f"{text!r} is not a torch_npu version this tool knows; choose one of "
        f"{', '.join(versions)} (default {versions[-1]})"
    )


@cache
def _npu_names(version: str) -> tuple[frozenset[str], dict[str, str]]:
    table = _load_json(rules_dir() / NAMES_DIR / f"{version}.json")
    return frozenset(table["npu_names"]), table.get("later_posts", {}).get("npu_names", {})


def load_tables(version: str = "") -> Tables:
    """The tables for a target torch_npu version ("": the newest)."""
    return _load_tables(version or known_versions()[-1])


def _post_release(names: dict[str, Any], post: int | None) -> dict[str, Any]:
    """A line's name table as one of its post releases has it: the names of
    ``later_posts`` that release has moved into the lists (None: every release of the line)."""
    if post is None:
        return names
    out = dict(names)
    later = {key: dict(v) for key, v in names.get("later_posts", {}).items()}
    for key, first in later.items():
        arrived = {n for n, p in first.items() if int(p.rsplit(".post", 1)[1]) <= post}
        if key in out:
            out[key] = sorted(set(out[key]) | arrived)
        later[key] = {n: p for n, p in first.items() if n not in arrived}
    out["later_posts"] = later
    return out


@cache
def _tf_adapter() -> TfAdapterTable:
    """rules/tf_adapter.json, the same for every target version (Tables.tf_adapter)."""
    from ms_fmk_transplt.tables.tf_adapter_table import loads

    return loads(_load_json(rules_dir() / "tf_adapter.json"))


@cache
def _load_tables(version: str) -> Tables:
    base = rules_dir()
    raw = _load_json(base / "interface_table.json")
    line, _, post = version.partition(".post")  # 2.1.0.post17: that release of the 2.1.0 line
    names = _post_release(
        _load_json(base / NAMES_DIR / f"{line}.json"), int(post) if post else None
    )
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
        torch_npu_version=version,
        later_posts=names.get("later_posts", {}).get("npu_names", {}),
        newer_names=tuple(
            (v, *_npu_names(v)) for v in known_versions() if version_key(v) > version_key(line)
        ),
        target_names={
            "npu_names": member_sets["npu_names"],
            **{k: frozenset(names[k]) for k in ("optim_names", "npu_functions") if k in names},
        },
        operators=load_operator_table(base, line),
        advice=load_advice_table(base),
        foreign_roots=frozenset(raw["foreign_cuda_roots"]["roots"]),
        unsupported=UnsupportedTable(
            _load_json(base / "unsupported_api.json"),
            LibraryTable(_load_json(base / "libraries.json")),
        ),
        similar={e["api"]: e for e in _load_json(base / "similar_api.json")["entries"]},
        tf_migration=load_tf_migration(_load_json(base / "tf_migration.json")),
        device_consumers=DeviceConsumerTable(_load_json(base / "device_consumers.json")),
        **sections(raw),
    )
