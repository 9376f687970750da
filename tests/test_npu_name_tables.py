"""The per-version torch_npu name tables (rules/torch_npu_names/<X.Y.Z>.json), as committed.

They are rebuilt from the public wheels by scripts/build_npu_names.py; these tests read only the
committed JSON (no wheel, no download), so they run anywhere.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NAMES_DIR = ROOT / "rules" / "torch_npu_names"

REQUIRED = {
    "$comment",
    "source",
    "torch_npu_version",
    "wheel_version",
    "torch_version_required",
    "rebuild",
    "npu_names",
    "npu_amp_names",
    "optim_names",
}
OPTIONAL = {"npu_functions"}  # left out when a wheel has no static source for them
NAME_LISTS = ("npu_names", "npu_amp_names", "optim_names", "npu_functions")

BASICS = {
    "is_available",
    "current_device",
    "device_count",
    "set_device",
    "synchronize",
    "device",
    "Stream",
    "stream",
    "current_stream",
    "default_stream",
    "Event",
    "amp",
}
AMP_BASICS = {"autocast", "GradScaler"}
OPTIM_BASICS = {"NpuFusedAdam", "NpuFusedAdamW", "NpuFusedSGD", "NpuFusedLamb"}
OPERATORS = {
    "npu_fusion_attention",
    "npu_rms_norm",
    "npu_rotary_mul",
    "npu_swiglu",
    "npu_confusion_transpose",
}

# Newer than torch_npu 2.1.0: absent from 2.1.0, present in the newest table; the value is the
# first version that has the name.
NEW_SINCE_2_1_0 = {
    "CubeMathType": "2.6.0",
    "npugraph_ex": "2.6.0",
    "set_op_timeout_ms": "2.6.0",
    "ExternalStream": "2.7.1",
    "NpuGraphOpHandler": "2.7.1",
    "get_per_process_memory_fraction": "2.7.1",
    "host_memory_stats": "2.7.1",
    "npurt": "2.7.1",
    "set_deterministic_level": "2.7.1",
    "use_compatible_impl": "2.7.1",
}
# Names often thought new in torch_npu 2.x, but the 2.1.0 table is made from the
# 2.1.0.post17 wheel (October 2025), which has all of them in torch_npu/npu/__init__.py
# __all__ (mem_get_info and ipc_collect defined in npu/utils.py, MemPool in npu/memory.py,
# NPUGraph, graph, make_graphed_callables and is_current_stream_capturing in npu/graphs.py,
# ``from .mstx import mstx``). The older-built 2.3.1.post6, 2.4.0.post4 and 2.5.1.post1
# wheels lack ipc_collect.
IN_2_1_0_POST17 = {
    "mem_get_info",
    "ipc_collect",
    "graph",
    "graphs",
    "make_graphed_callables",
    "NPUGraph",
    "MemPool",
    "is_current_stream_capturing",
    "mstx",
}
WITHOUT_IPC_COLLECT = {"2.3.1", "2.4.0", "2.5.1"}
# Removed: the last version that has it.
REMOVED = {"MemPoolContext": "2.12.0"}


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@cache
def tables() -> dict[str, dict[str, Any]]:
    """version -> table, oldest first."""
    found = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in NAMES_DIR.glob("*.json")}
    return {v: found[v] for v in sorted(found, key=version_key)}


def versions() -> list[str]:
    return list(tables())


def newest() -> dict[str, Any]:
    return tables()[versions()[-1]]


def first_version(name: str, key: str = "npu_names") -> str | None:
    return next((v for v, t in tables().items() if name in t[key]), None)


def test_tables_exist() -> None:
    assert "2.1.0" in tables() and "2.14.0" in tables()
    assert len(tables()) >= 2


@pytest.mark.parametrize("version", versions())
def test_structure(version: str) -> None:
    path = NAMES_DIR / f"{version}.json"
    text = path.read_text(encoding="utf-8")
    table = json.loads(text)
    assert text == json.dumps(table, indent=1, ensure_ascii=False) + "\n"  # as the script writes
    assert REQUIRED <= set(table) <= REQUIRED | OPTIONAL
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    assert table["torch_npu_version"] == version
    wheel_version = table["wheel_version"]
    assert re.fullmatch(re.escape(version) + r"(\.post\d+)?", wheel_version)
    wheel = re.search(r"\((torch_npu-[^ ,()]+\.whl), sha256 [0-9a-f]{16}\)", table["source"])
    assert wheel is not None, table["source"]
    assert wheel.group(1).startswith(f"torch_npu-{wheel_version}-")
    assert table["source"].startswith(f"torch-npu {wheel_version} wheel (")
    assert f"torch-npu=={wheel_version}" in table["rebuild"]
    assert table["rebuild"].endswith(f"scripts/build_npu_names.py {wheel.group(1)}")
    assert table["torch_version_required"].startswith(f"torch=={version}")
    assert isinstance(table["$comment"], str) and "build_npu_names.py" in table["$comment"]
    for key in NAME_LISTS:
        if key not in table:
            continue
        names = table[key]
        assert isinstance(names, list) and names, key
        assert names == sorted(set(names)), f"{key} is not sorted and unique"
        assert all(isinstance(n, str) and n.isidentifier() for n in names), key


@pytest.mark.parametrize("version", versions())
def test_every_version_has_the_basics(version: str) -> None:
    table = tables()[version]
    assert BASICS <= set(table["npu_names"]), BASICS - set(table["npu_names"])
    assert AMP_BASICS <= set(table["npu_amp_names"])
    assert OPTIM_BASICS <= set(table["optim_names"])
    if "npu_functions" in table:
        assert OPERATORS <= set(table["npu_functions"])
    # implementation imports of torch_npu/npu/__init__.py are not torch.npu API
    assert not {"os", "torch", "torch_npu", "threading", "Tuple"} & set(table["npu_names"])


def test_new_names_absent_in_2_1_0_present_in_newest() -> None:
    old, new = set(tables()["2.1.0"]["npu_names"]), set(newest()["npu_names"])
    for name, since in NEW_SINCE_2_1_0.items():
        assert name not in old, name
        assert name in new, name
        assert first_version(name) == since, name


def test_names_the_2_1_0_post17_wheel_already_has() -> None:
    assert tables()["2.1.0"]["wheel_version"] == "2.1.0.post17"
    for version, table in tables().items():
        missing = IN_2_1_0_POST17 - set(table["npu_names"])
        assert missing == ({"ipc_collect"} if version in WITHOUT_IPC_COLLECT else set()), version


def test_removed_names() -> None:
    for name, last in REMOVED.items():
        have = [v for v, t in tables().items() if name in t["npu_names"]]
        assert have and have[-1] == last, name
        assert name not in newest()["npu_names"]
