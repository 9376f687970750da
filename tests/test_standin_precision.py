"""The torch_npu stand-in as the precision kit's "NPU": seeding that reaches the npu device
module (torch warns otherwise), and the fault switch MSFT_STANDIN_SKEW=linear (skew.py), off by
default, that makes F.linear -- and so nn.Linear -- compute a wrong result."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import run_checked, standin_calls, standin_env
from required_tools import need_module

pytestmark = pytest.mark.execution
need_module("torch", "torch is not installed")


SEEDED = """
import torch, torch_npu
torch.manual_seed(5)
first = torch.rand(3)
torch.npu.manual_seed_all(5)
again = torch.rand(3)
torch.npu.manual_seed(5)
third = torch.rand(3)
torch.seed(); torch.npu.seed()  # each seeds the other's generator: no endless recursion
assert torch.equal(first, again) and torch.equal(first, third), (first, again, third)
assert torch.npu._is_in_bad_fork() is False
"""

LINEAR = """
import json, torch, torch_npu
import torch.nn.functional as F
x = torch.tensor([[1.0, 2.0]]); w = torch.tensor([[3.0, 4.0]]); b = torch.tensor([0.5])
layer = torch.nn.Linear(2, 1)
with torch.no_grad():
    layer.weight.copy_(w); layer.bias.copy_(b)
out = layer(x)
out.sum().backward()
print(json.dumps([F.linear(x, w, b).item(), out.item(), F.linear(x, w).item(),
                  layer.weight.grad.tolist(), layer.bias.grad.tolist()]))
"""


def _run(
    tmp_path: Path, code: str, skew: str | None = None
) -> tuple[str, str, list[dict[str, object]]]:
    """stdout, stderr (empty on success) and the calls recorded; UserWarnings are errors."""
    log = tmp_path / "calls.jsonl"
    env = standin_env(log, **({"MSFT_STANDIN_SKEW": skew} if skew is not None else {}))
    argv = [sys.executable, "-W", "error::UserWarning", "-c", code]
    proc = run_checked(argv, env, cwd=tmp_path, timeout=120)
    return proc.stdout, "" if proc.returncode == 0 else proc.stderr[-2000:], standin_calls(log)


def test_seeding_reaches_the_npu_module_without_a_warning(tmp_path: Path) -> None:
    """torch.manual_seed warns "Set seed for `npu` device does not take effect" unless the
    device module has _is_in_bad_fork and manual_seed_all: the warning is an error here."""
    _, error, _ = _run(tmp_path, SEEDED)
    assert error == ""


def test_linear_is_exact_by_default(tmp_path: Path) -> None:
    out, error, calls = _run(tmp_path, LINEAR)
    assert error == ""
    # 1*3 + 2*4 + 0.5; the gradients of an exact linear: x for the weight, 1 for the bias
    assert json.loads(out) == [11.5, 11.5, 11.0, [[1.0, 2.0]], [1.0]]
    assert not [c for c in calls if c["event"] == "standin.skew"]


def test_the_skew_switch_makes_linear_wrong(tmp_path: Path) -> None:
    out, error, calls = _run(tmp_path, LINEAR, skew="linear")
    assert error == ""
    functional, layer, no_bias, weight_grad, bias_grad = json.loads(out)
    # the weight doubled, 0.1 added to the bias: 2*(1*3 + 2*4) + 0.5 + 0.1
    assert functional == pytest.approx(22.6) and layer == pytest.approx(22.6)
    assert no_bias == pytest.approx(22.0)
    # the parameters' gradients keep their shapes (msprobe matches backward rows by shape)
    assert weight_grad == [[2.0, 4.0]] and bias_grad == [1.0]
    assert [c for c in calls if c["event"] == "standin.skew"] == [
        {"event": "standin.skew", "op": "linear"}
    ]


def test_an_unknown_skew_is_refused(tmp_path: Path) -> None:
    _, error, _ = _run(tmp_path, "import torch_npu", skew="conv2d")
    assert "ValueError: MSFT_STANDIN_SKEW='conv2d': the stand-in knows linear" in error
