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
    "wheel_versions",
    "torch_version_required",
    "rebuild",
    "npu_names",
    "npu_amp_names",
    "optim_names",
    "later_posts",
}
OPTIONAL = {"npu_functions"}  # left out when a wheel has no static source for them
NAME_LISTS = ("npu_names", "npu_amp_names", "optim_names", "npu_functions")
DOWNLOAD = (
    "pip download --no-deps --only-binary=:all: --python-version 3.11 "
    "--platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64"
)

# The releases of each line that ``pip index versions torch-npu`` listed when the tables were
# built: each table must have been made from all of them (a user targeting X.Y.Z may run any).
POSTS = {
    "2.1.0": ["2.1.0.post8", "2.1.0.post10", "2.1.0.post12", "2.1.0.post13", "2.1.0.post17"],
    "2.3.1": ["2.3.1.post2", "2.3.1.post4", "2.3.1.post6"],
    "2.4.0": ["2.4.0", "2.4.0.post2", "2.4.0.post4"],
    "2.5.1": ["2.5.1", "2.5.1.post1"],
    "2.6.0": ["2.6.0", "2.6.0.post3", "2.6.0.post5"],
    "2.7.1": [
        "2.7.1",
        "2.7.1.post2",
        "2.7.1.post4",
        "2.7.1.post6",
        "2.7.1.post8",
        "2.7.1.post10",
        "2.7.1.post11",
    ],
    "2.8.0": ["2.8.0", "2.8.0.post2", "2.8.0.post4", "2.8.0.post5"],
    "2.9.0": ["2.9.0", "2.9.0.post2", "2.9.0.post4", "2.9.0.post6", "2.9.0.post8", "2.9.0.post9"],
    "2.10.0": ["2.10.0", "2.10.0.post2", "2.10.0.post4", "2.10.0.post6", "2.10.0.post7"],
    "2.11.0": ["2.11.0", "2.11.0.post2", "2.11.0.post3"],
    "2.12.0": ["2.12.0", "2.12.0.post2", "2.12.0.post3"],
    "2.13.0": ["2.13.0"],
    "2.14.0": ["2.14.0"],
}

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

# Newer than torch_npu 2.1.0: absent from every 2.1.0 wheel, present in the newest table; the
# value is (the first post release that has the name, the first release line all of whose
# post releases have it).
NEW_SINCE_2_1_0 = {
    "CubeMathType": ("2.6.0.post5", "2.9.0"),
    "npugraph_ex": ("2.6.0.post5", "2.9.0"),
    "set_op_timeout_ms": ("2.6.0.post5", "2.9.0"),
    "NpuGraphOpHandler": ("2.7.1.post4", "2.10.0"),
    "get_per_process_memory_fraction": ("2.7.1.post4", "2.10.0"),
    "host_memory_stats": ("2.7.1.post4", "2.10.0"),
    "set_deterministic_level": ("2.7.1.post4", "2.10.0"),
    "use_compatible_impl": ("2.7.1.post4", "2.10.0"),
    # in 2.7.1.post11, 2.9.0.post9, 2.10.0.post7, 2.11.0.post3, 2.12.0.post3, no 2.8.0 wheel
    "ExternalStream": ("2.7.1.post11", "2.13.0"),
    "npurt": ("2.7.1.post11", "2.13.0"),
}
# Names the 2.1.0.post17 wheel (October 2025) has in torch_npu/npu/__init__.py __all__
# (mem_get_info and ipc_collect defined in npu/utils.py, MemPool in npu/memory.py, NPUGraph,
# graph, make_graphed_callables and is_current_stream_capturing in npu/graphs.py,
# ``from .mstx import mstx``), but older post releases of 2.1.0 and of other lines lack: per
# line, the names only later post releases have (with the first of them), and the names no
# wheel of the line has. The rest of IN_2_1_0_POST17 every wheel of the line has.
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
GRAPH_NAMES = {
    "graph",
    "graphs",
    "make_graphed_callables",
    "NPUGraph",
    "MemPool",
    "is_current_stream_capturing",
}
ONLY_IN_LATER_POSTS = {
    "2.1.0": {**dict.fromkeys(GRAPH_NAMES, "2.1.0.post12"), "ipc_collect": "2.1.0.post17"},
    "2.3.1": dict.fromkeys(GRAPH_NAMES, "2.3.1.post6"),
    "2.4.0": dict.fromkeys(GRAPH_NAMES, "2.4.0.post4"),
    "2.6.0": {"ipc_collect": "2.6.0.post3"},
}
IN_NO_WHEEL = {"2.3.1": {"ipc_collect"}, "2.4.0": {"ipc_collect"}, "2.5.1": {"ipc_collect"}}
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
    """The first release line all of whose post releases have the name."""
    return next((v for v, t in tables().items() if name in t[key]), None)


def first_post(name: str, key: str = "npu_names") -> str | None:
    """The first post release that has the name (and every later one of its line)."""
    for table in tables().values():
        if name in table["later_posts"][key]:
            return table["later_posts"][key][name]
        if name in table[key]:
            return table["wheel_versions"][0]
    return None


def post_key(version: str) -> int:
    """2.1.0.post17 -> 17, 2.1.0 -> -1."""
    match = re.search(r"\.post(\d+)$", version)
    return int(match.group(1)) if match else -1


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
    posts = table["wheel_versions"]
    assert isinstance(posts, list) and posts
    assert all(re.fullmatch(re.escape(version) + r"(\.post\d+)?", p) for p in posts), posts
    assert posts == sorted(set(posts), key=post_key), "wheel_versions not sorted and unique"
    sources = table["source"]
    assert isinstance(sources, list) and len(sources) == len(posts)
    files = []
    for post, source in zip(posts, sources):
        wheel = re.fullmatch(r"(torch_npu-[^ ]+\.whl) sha256 [0-9a-f]{16}", source)
        assert wheel is not None, source
        assert wheel.group(1).startswith(f"torch_npu-{post}-"), source
        files.append(wheel.group(1))
    if len(posts) == 1:
        fetch = f"{DOWNLOAD} torch-npu=={posts[0]}"
    else:
        fetch = f'for v in {" ".join(posts)}; do {DOWNLOAD} "torch-npu==$v"; done'
    assert table["rebuild"] == f"{fetch} && python scripts/build_npu_names.py {' '.join(files)}"
    assert table["torch_version_required"].startswith(f"torch=={version}")
    assert isinstance(table["$comment"], str) and "build_npu_names.py" in table["$comment"]
    for key in NAME_LISTS:
        if key not in table:
            continue
        names = table[key]
        assert isinstance(names, list) and names, key
        assert names == sorted(set(names)), f"{key} is not sorted and unique"
        assert all(isinstance(n, str) and n.isidentifier() for n in names), key
    later = table["later_posts"]
    assert isinstance(later, dict)
    assert list(later) == [key for key in NAME_LISTS if key in table]
    for key, firsts in later.items():
        assert isinstance(firsts, dict), key
        assert list(firsts) == sorted(firsts), f"later_posts.{key} is not sorted"
        assert all(isinstance(n, str) and n.isidentifier() for n in firsts), key
        # a name every post release has is in the list, not here
        assert not set(firsts) & set(table[key]), (key, set(firsts) & set(table[key]))
        # the first post release that has it: a later post release of this line
        assert set(firsts.values()) <= set(posts[1:]), (key, set(firsts.values()) - set(posts))


def test_made_from_every_post_release() -> None:
    for version, posts in POSTS.items():
        assert set(posts) <= set(tables()[version]["wheel_versions"]), version


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
    old, new = tables()["2.1.0"], set(newest()["npu_names"])
    for name, (post, since) in NEW_SINCE_2_1_0.items():
        assert name not in old["npu_names"] and name not in old["later_posts"]["npu_names"], name
        assert name in new, name
        assert first_post(name) == post, name
        assert first_version(name) == since, name


def test_2_1_0_names_only_later_post_releases_have() -> None:
    """A user of 2.1.0 may run 2.1.0.post8, which lacks them: not migrated to for 2.1.0."""
    table = tables()["2.1.0"]
    expected = {
        "ipc_collect": "2.1.0.post17",
        "NPUGraph": "2.1.0.post12",
        "MemPool": "2.1.0.post12",
        "make_graphed_callables": "2.1.0.post12",
        "is_current_stream_capturing": "2.1.0.post12",
        "graph": "2.1.0.post12",
    }
    for name, post in expected.items():
        assert name not in table["npu_names"], name
        assert table["later_posts"]["npu_names"][name] == post, name
        assert name in newest()["npu_names"], name


def test_names_the_2_1_0_post17_wheel_has() -> None:
    for version, table in tables().items():
        later = {n: p for n, p in table["later_posts"]["npu_names"].items() if n in IN_2_1_0_POST17}
        absent = IN_2_1_0_POST17 - set(table["npu_names"]) - set(later)
        assert later == ONLY_IN_LATER_POSTS.get(version, {}), version
        assert absent == IN_NO_WHEEL.get(version, set()), version


def test_removed_names() -> None:
    for name, last in REMOVED.items():
        have = [v for v, t in tables().items() if name in t["npu_names"]]
        assert have and have[-1] == last, name
        assert name not in newest()["npu_names"]
