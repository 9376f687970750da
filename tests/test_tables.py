"""The rule tables: their rows are consistent and name what torch_npu has (rule ids, their code,
pages and fixtures: tests/test_rule_catalog.py)."""

from __future__ import annotations

from pathlib import Path

from ms_fmk_transplt.tables import load_tables

ROOT = Path(__file__).resolve().parent.parent


def test_table_targets_exist_in_torch_npu() -> None:
    tables = load_tables()
    for row in tables.rows:
        member = row.npu.split(".")[2]
        assert member in tables.npu_names, row.npu
    assert "nvtx" not in tables.npu_names and "jiterator" not in tables.npu_names
    assert {"autocast", "GradScaler"} <= tables.npu_amp_names


def test_unsupported_table() -> None:
    table = load_tables().unsupported
    for entry in table.apis.values():  # "none": listed to say it is no row
        assert entry.category in table.categories and entry.action in ("manual", "caveat", "none")
        assert entry.tip
    for entry in table.env.values():
        assert entry.category in table.categories and entry.action in ("manual", "caveat")
        assert entry.tip
    # an enum value and a query under torch.backends.cuda are no row; a switch is one
    assert table.reported_api("torch.backends.cuda.SDPBackend.MATH") is None
    assert table.reported_api("torch.backends.cuda.flash_sdp_enabled") is None
    assert table.reported_api("torch.backends.cuda.enable_flash_sdp").action == "caveat"
    assert table.reported_api("torch.backends.cuda.cufft_plan_cache").key == "torch.backends.cuda"
    assert table.module("apex.amp") is None
    # apex's CUDA fused optimizers are manual work; Ascend's apex ships the NpuFused* ones
    assert table.module("apex.optimizers.FusedAdam").action == "manual"
    assert table.module("apex.optimizers.NpuFusedAdam") is None
    assert table.module("apex.contrib.sparsity").key == "apex.contrib"
    assert table.module("tritonclient.http") is None  # not triton
    assert table.environment("NCCL_P2P_LEVEL").key == "NCCL_P2P_"  # the nearest HCCL switch
    assert table.environment("NCCL_ALGO").key == "NCCL_"
    assert table.torch_op("torch.ops.aten.add") is None
    assert table.torch_op("torch.ops.myext.op") is not None
    assert table.api("torch.backends.cudnn.version").key == "torch.backends.cudnn"


def test_lookup() -> None:
    t = load_tables()
    assert t.lookup_cuda("torch.cuda.amp.autocast") == ("torch.npu.amp.autocast", "amp.cuda_amp")
    assert t.lookup_cuda("torch.cuda.is_available")[1] == "device_api.interface_table"
    assert t.lookup_cuda("torch.cuda.memory_stats")[1] == "device_api.npu_namespace"
    assert t.lookup_cuda("torch.cuda.nvtx.range_push") is None
    assert t.lookup_cuda("torch.cuda.amp.not_a_name") is None
