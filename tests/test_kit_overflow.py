"""``ms_fmk_transplt kit overflow`` (issue 49: the porting guide's operator overflow detection),
run: the migrated project executes under the torch_npu stand-in on the CPU, its launcher reports
the first operator whose output overflowed to inf/nan, with the step and the call site in the
project; a -inf mask made on purpose is no overflow; a run without one exits 0."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_checked, standin_env
from required_tools import need_module

from ms_fmk_transplt.commands.kit_cli import kit

MODEL = """import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 1)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        mask = torch.zeros_like(x).masked_fill(x > 0, float("-inf"))  # on purpose: no overflow
        if self.calls == OVERFLOW_AT:
            x = INJECTED
        return self.fc(x + mask.exp())
"""
TRAIN = """import torch

from model import Net

torch.manual_seed(0)
model = Net().cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(6):
    x, y = torch.randn(4, 3).cuda(), torch.randn(4, 1).cuda()
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
print("FINAL")
"""
# what overflows, at which call of forward: (the line, the operator, what it gives)
CASES = {
    "fp16_mul": ("(x.half() * 70000.0).float()", "aten.mul.Tensor", "inf", "float16", 3),
    "log_zero": ("torch.log(x - x)", "aten.log.default", "inf", "float32", 1),
    "none": ("x", "", "", "", 0),
}


def _tree(tmp_path: Path, case: str) -> Path:
    injected, _, _, _, at = CASES[case]
    project = tmp_path / "proj"
    project.mkdir()
    model = MODEL.replace("INJECTED", injected).replace("OVERFLOW_AT", str(at))
    (project / "model.py").write_text(model)
    (project / "train.py").write_text(TRAIN)
    args = ["overflow", "-q", "--no-cache", "-i", str(project), "-o", str(tmp_path), "-m"]
    result = CliRunner().invoke(kit, [*args, "train.py"])
    assert result.exit_code == 0, result.output
    return tmp_path / "proj_msft_overflow"


def test_the_overflow_tree_holds_its_runtime_and_launcher(tmp_path: Path) -> None:
    tree = _tree(tmp_path, "fp16_mul")
    for name in ("msft_kit.py", "msft_overflow.py", "run_overflow_npu.sh", "KIT_README.md"):
        assert (tree / name).is_file(), name
    readme = (tree / "KIT_README.md").read_text(encoding="utf-8")
    assert "overflow/overflow.json" in readme and "msft_kit.overflow_begin()" in readme
    assert "import torch_npu" in (tree / "train.py").read_text()


@pytest.mark.execution
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_first_overflowing_operator_is_reported_with_its_call_site(
    tmp_path: Path, case: str
) -> None:
    need_module("torch", "torch is not installed")
    tree = _tree(tmp_path, case)
    injected, op, produced, dtype, at = CASES[case]
    log = tmp_path / "standin.jsonl"
    env = standin_env(log, PYTHON=sys.executable, PYTHONDONTWRITEBYTECODE="1")
    env.pop("ASCEND_RT_VISIBLE_DEVICES", None)
    proc = run_checked(["bash", str(tree / "run_overflow_npu.sh")], env)
    result = json.loads((tree / "overflow" / "overflow.json").read_text(encoding="utf-8"))
    if not op:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert result == {"found": False, "steps": 6}
        assert "FINAL" in proc.stdout and "no overflow in the steps checked" in proc.stdout
        return
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = MODEL.splitlines().index("            x = INJECTED") + 1
    assert result["op"] == op and result["produced"] == produced and result["dtype"] == dtype
    assert (result["file"], result["line"], result["step"]) == ("model.py", line, at - 1)
    assert result["code"] == f"x = {injected}"
    assert result["stack"][-1] == f"model.py:{line} forward"
    assert f"overflow: step {at - 1}: {op} at model.py:{line} gives {produced}" in proc.stderr
    assert f"step {at - 1} loss" in proc.stdout and f"step {at} loss" not in proc.stdout
    assert "FINAL" not in proc.stdout
