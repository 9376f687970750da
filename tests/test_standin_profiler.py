"""The torch_npu stand-in's profiler and AOE switch (tests/standin/torch_npu/profiler.py, aoe.py),
which the kits of issue 33 will be executed against: torch_npu 2.x's signatures, the schedule's
steps, what they leave on disk, the calls recorded, and failures where code misuses them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import run_checked, standin_calls, standin_env

pytestmark = pytest.mark.execution


PROFILED = """
import torch, torch_npu
from torch_npu import profiler as P

config = P._ExperimentalConfig(
    profiler_level=P.ProfilerLevel.Level1, aic_metrics=P.AiCMetrics.PipeUtilization
)
prof = P.profile(
    activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.NPU],
    schedule=P.schedule(wait=1, warmup=1, active=2, repeat=1, skip_first=1),
    on_trace_ready=P.tensorboard_trace_handler("prof", worker_name="w"),
    experimental_config=config,
)
prof.start()
for i in range(8):
    x = torch.ones(2, device="npu") * i
    prof.step()
prof.stop()
torch.npu.set_aoe("aoe/dump")
torch_npu.npu.set_aoe("aoe/dump")
"""


def _run(tmp_path: Path, code: str) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    log = tmp_path / "calls.jsonl"
    proc = run_checked([sys.executable, "-c", code], standin_env(log), cwd=tmp_path, timeout=120)
    return proc, standin_calls(log)


def test_a_schedule_records_its_active_steps_and_leaves_a_trace(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, PROFILED)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # skip 1, wait 1, warm up 1, then steps 3 and 4 recorded; saved when step 4 ends
    traces = list((tmp_path / "prof").glob("w_*_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json"))
    assert len(traces) == 1
    assert json.loads(traces[0].read_text()) == {"steps": [3, 4], "activities": ["CPU", "NPU"]}
    events = [c["event"] for c in calls]
    assert events.index("profiler.trace_ready") == events.index("profiler.step") + 4
    assert calls[events.index("profiler.stop")]["recorded"] == [3, 4]
    # set_aoe, through torch.npu and torch_npu.npu: the dump folder made, each call recorded
    marker = json.loads((tmp_path / "aoe/dump/aoe_dump.json").read_text())
    assert [m["dump_path"] for m in marker] == ["aoe/dump", "aoe/dump"]
    assert events.count("npu.set_aoe") == 2


@pytest.mark.parametrize(
    ("code", "error"),
    [
        # torch's positional order (wait, warmup, active) is not torch_npu's (wait, active, ...)
        ("P.profile([P.ProfilerActivity.CPU])", "TypeError"),
        ("P.profile().step()", "profile.step(): the profiler is new"),
        ("p = P.profile(); p.start(); p.start()", "profile.start(): the profiler is started"),
        ("p = P.profile(); p.start(); p.stop(); p.step()", "the profiler is stopped"),
        ("P.profile().stop()", "profile.stop(): the profiler is new"),
        ("P.schedule(wait=1, active=0)", "active must be >= 1"),
        ("P._ExperimentalConfig(profiler_level='Level9')", "profiler_level"),
        ("P._ExperimentalConfig(level=1)", "TypeError"),
        ("torch.npu.set_aoe('')", "dump_path must be a non-empty path"),
    ],
)
def test_misuse_fails(tmp_path: Path, code: str, error: str) -> None:
    header = "import torch, torch_npu\nfrom torch_npu import profiler as P\n"
    proc, _ = _run(tmp_path, header + code)
    assert proc.returncode != 0 and error in proc.stderr, proc.stderr[-2000:]


def test_the_npu_schedule_takes_active_second(tmp_path: Path) -> None:
    """schedule(1, 2) is wait=1, active=2 in torch_npu (torch's would be wait=1, warmup=2)."""
    code = (
        "import torch, torch_npu\nfrom torch_npu import profiler as P\n"
        "s = P.schedule(1, 2)\nprint([s(i).name for i in range(3)])\n"
    )
    proc, _ = _run(tmp_path, code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "['NONE', 'RECORD', 'RECORD_AND_SAVE']"
