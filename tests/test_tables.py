"""The rule tables, the engine modules and the fixtures stay in step: from a rule id you find its
code (engine/<module>.py), its data (rules/interface_table.json) and its fixture
(fixtures/rules/<rule id>/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ms_fmk_transplt.engine.environment_keys import RULE as ENVIRONMENT_RULE
from ms_fmk_transplt.engine.operator_support import RULES as OPERATOR_RULES
from ms_fmk_transplt.tables import load_tables

ROOT = Path(__file__).resolve().parent.parent


def rule_ids(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if (key == "rule" or key.endswith("_rule")) and isinstance(value, str):
                found.add(value)
            else:
                found |= rule_ids(value)
    elif isinstance(node, list):
        for item in node:
            found |= rule_ids(item)
    return found


def test_every_rule_has_code_data_and_fixture() -> None:
    ids: set[str] = set()
    for name in ("interface_table.json", "unsupported_api.json", "similar_api.json"):
        ids |= rule_ids(json.loads((ROOT / "rules" / name).read_text(encoding="utf-8")))
    ids |= set(load_tables().advice.by_id) | set(OPERATOR_RULES.values()) | {ENVIRONMENT_RULE}
    assert len(ids) >= 15
    fixtures = {p.name for p in (ROOT / "fixtures" / "rules").iterdir() if p.is_dir()}
    assert ids == fixtures
    for rule in ids:
        module = rule.split(".")[0]
        assert (ROOT / "ms_fmk_transplt" / "engine" / f"{module}.py").is_file(), rule
        assert any((ROOT / "fixtures" / "rules" / rule).glob("*.expected.py")), rule


def test_table_targets_exist_in_torch_npu() -> None:
    tables = load_tables()
    for row in tables.rows:
        member = row.npu.split(".")[2]
        assert member in tables.npu_names, row.npu
    assert "nvtx" not in tables.npu_names and "jiterator" not in tables.npu_names
    assert {"autocast", "GradScaler"} <= tables.npu_amp_names


def test_unsupported_table() -> None:
    table = load_tables().unsupported
    for entry in [*table.apis.values(), *table.env.values()]:
        assert entry.category in table.categories and entry.action in ("manual", "caveat")
        assert entry.tip
    assert table.module("apex.amp") is None and table.module("apex.optimizers.FusedAdam") is None
    assert table.module("apex.contrib.sparsity").key == "apex.contrib"
    assert table.module("tritonclient.http") is None  # not triton
    assert table.environment("NCCL_P2P_LEVEL").key == "NCCL_"
    assert table.torch_op("torch.ops.aten.add") is None
    assert table.torch_op("torch.ops.myext.op") is not None
    assert table.api("torch.backends.cudnn.version").key == "torch.backends.cudnn"
    assert set(table.caveat_rules) <= _all_rule_ids() | {ENVIRONMENT_RULE}


def _all_rule_ids() -> set[str]:
    return rule_ids(json.loads((ROOT / "rules" / "interface_table.json").read_text("utf-8")))


def test_lookup() -> None:
    t = load_tables()
    assert t.lookup_cuda("torch.cuda.amp.autocast") == ("torch.npu.amp.autocast", "amp.cuda_amp")
    assert t.lookup_cuda("torch.cuda.is_available")[1] == "device_api.interface_table"
    assert t.lookup_cuda("torch.cuda.memory_stats")[1] == "device_api.npu_namespace"
    assert t.lookup_cuda("torch.cuda.nvtx.range_push") is None
    assert t.lookup_cuda("torch.cuda.amp.not_a_name") is None
