"""-s runs in the span pass (engine/rules/specify_device/), interleaved with the built-in
rewrites of the same node: on every fixture the events describe the diff and a second run
changes nothing; the Before of each rewrite shows the text the one before it left."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_files import READABLE, ROOT, relative
from helpers import assert_events_match_diff

from ms_fmk_transplt.engine.migrate import migrate_source
from ms_fmk_transplt.engine.options import EngineOptions
from ms_fmk_transplt.engine.spans.span_pass import supports
from ms_fmk_transplt.tables import load_tables

SPECIFY_DEVICE = EngineOptions(specify_device=True)


@pytest.mark.parametrize("case", READABLE, ids=relative)
def test_events_describe_the_diff_and_a_second_run_changes_nothing(case: Path) -> None:
    source = case.read_bytes()
    tables = load_tables()
    result = migrate_source(source, case.name, tables, SPECIFY_DEVICE)
    assert result.libcst_stages == ""
    assert_events_match_diff(source, result.output, result.events, relative(case))
    again = migrate_source(result.output, case.name, tables, SPECIFY_DEVICE)
    assert again.output == result.output and again.events == []


def test_rewrites_of_one_node_interleave() -> None:
    """set_device(1): -s sees the torch.npu the interface table wrote; .cuda(1): the
    tensor-method rule sees the MSFT_NPU_DEVICE -s wrote."""
    source = b"import torch\ntorch.cuda.set_device(1)\ny = x.cuda(1)\n"
    result = migrate_source(source, "m.py", load_tables(), SPECIFY_DEVICE)
    assert result.output == (
        b"import torch\n"
        b"import torch_npu\n"
        b"import os\n"
        b'MSFT_NPU_DEVICE = "npu:" + os.environ.get("DEVICE_ID", "0")'
        b"  # ms_fmk_transplt -s: the NPU is chosen by DEVICE_ID\n"
        b"torch.npu.set_device(MSFT_NPU_DEVICE)\n"
        b"y = x.npu(MSFT_NPU_DEVICE)\n"
    )
    helper = (
        'MSFT_NPU_DEVICE = "npu:" + os.environ.get("DEVICE_ID", "0")'
        "  # ms_fmk_transplt -s: the NPU is chosen by DEVICE_ID"
    )
    assert [
        (e.rule, e.operation.value, e.start_line, e.out_start_line, e.before, e.after)
        for e in result.events
    ] == [
        ("imports.torch_npu", "INSERT", 2, 2, "", "import torch_npu"),
        ("specify_device.helper", "INSERT", 2, 3, "", "import os"),
        ("specify_device.helper", "INSERT", 2, 4, "", helper),
        (
            "device_api.interface_table",
            "MODIFY",
            2,
            5,
            "torch.cuda.set_device",
            "torch.npu.set_device",
        ),
        (
            "specify_device.device",
            "MODIFY",
            2,
            5,
            "torch.npu.set_device(1)",
            "torch.npu.set_device(MSFT_NPU_DEVICE)",
        ),
        ("specify_device.device", "MODIFY", 3, 6, "x.cuda(1)", "x.cuda(MSFT_NPU_DEVICE)"),
        (
            "tensor_methods.cuda_call",
            "MODIFY",
            3,
            6,
            "x.cuda(MSFT_NPU_DEVICE)",
            "x.npu(MSFT_NPU_DEVICE)",
        ),
    ]


def test_specify_device_runs_take_the_span_pass() -> None:
    assert supports(SPECIFY_DEVICE)
    assert not supports(EngineOptions(specify_device=True, similar=True))
    case = ROOT / "fixtures/rules/specify_device.device/hardcoded.py"
    result = migrate_source(case.read_bytes(), case.name, load_tables(), SPECIFY_DEVICE)
    assert result.status.name == "CHANGED" and result.libcst_stages == ""
    # so the LibCST stages' size limit (5 MiB) does not skip a large file run with -s
    small_limit = EngineOptions(specify_device=True, max_cst_bytes=100)
    assert len(case.read_bytes()) > 100
    result = migrate_source(case.read_bytes(), case.name, load_tables(), small_limit)
    assert result.status.name == "CHANGED" and b"MSFT_NPU_DEVICE" in result.output
