"""Issue 49: what a kit checks before it writes anything, read from the CLI's exit code and
stderr and from KIT_README.md. A --loop file MAIN never imports is refused (the program model's
import graph decides); a script without a loop is told where the loop is (a module it imports,
or no file of the project: an installed library's loop cannot take the calls); with --loop,
MAIN's own calls are checked too; the precision kit warns of device random numbers and of
mixup / cutmix / drop-path left on, at their input lines, the terminal's and the README's
line numbers being the same (the input's)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from helpers import run_checked

ROOT = Path(__file__).resolve().parent.parent

TRAINER = """import torch


def fit(model, batches):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in batches:
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""
RUN = """import torch
import torch.distributed as dist

from pkg.trainer import fit

dist.init_process_group("nccl")
fit(torch.nn.Linear(3, 1).cuda(), [])
"""


def _project(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _kit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return run_checked([sys.executable, "-m", "ms_fmk_transplt", "kit", *args], env, cwd=cwd)


def _trainer_project(tmp_path: Path) -> Path:
    return _project(
        tmp_path / "proj",
        {
            "run.py": RUN,
            "pkg/__init__.py": "",
            "pkg/trainer.py": TRAINER,
            "lonely.py": TRAINER,  # a loop nobody imports
            "tools/plain.py": "import torch\nprint(torch.zeros(1))\n",
        },
    )


def _refused(proc: subprocess.CompletedProcess[str], out: Path) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.rstrip().endswith("; nothing written"), proc.stderr
    assert not out.exists()
    return proc.stderr


def test_a_loop_file_main_never_imports_is_refused_with_loop_as_its_label(
    tmp_path: Path,
) -> None:
    project = _trainer_project(tmp_path)
    out = tmp_path / "out"
    common = ["aoe", "-i", str(project), "-o", str(out), "-m", "run.py"]
    err = _refused(_kit(*common, "--loop", "lonely.py", cwd=tmp_path), out)
    assert err.startswith("ms_fmk_transplt: error: lonely.py: kit aoe --loop: run.py never imports")
    # a file MAIN imports (through the trainer), without a loop: refused under --loop's name
    (project / "pkg" / "trainer.py").write_text("from pkg import helpers\n" + TRAINER)
    (project / "pkg" / "helpers.py").write_text("import torch\n")
    err = _refused(_kit(*common, "--loop", "pkg/helpers.py", cwd=tmp_path), out)
    assert err.startswith(
        "ms_fmk_transplt: error: pkg/helpers.py: kit aoe --loop: no training loop found"
    ), err
    assert "-m:" not in err


def test_without_loop_the_refusal_names_the_imported_module_holding_it(tmp_path: Path) -> None:
    project = _trainer_project(tmp_path)
    out = tmp_path / "out"
    proc = _kit("profile", "-i", str(project), "-o", str(out), "-m", "run.py", cwd=tmp_path)
    err = _refused(proc, out)
    assert "(a loop in a module the script imports, pkg/trainer.py: --loop pkg/trainer.py)" in err


def test_a_loop_in_an_installed_library_is_not_suggested_as_loop(tmp_path: Path) -> None:
    """basicsr's scripts: ``train_pipeline(root)`` runs the library's loop."""
    project = _project(
        tmp_path / "proj",
        {
            "realesrgan/__init__.py": "",
            "realesrgan/archs.py": "import torch\n",
            "realesrgan/train.py": "from basicsr.train import train_pipeline\n"
            "import realesrgan.archs\n\nif __name__ == '__main__':\n    train_pipeline('.')\n",
        },
    )
    out = tmp_path / "out"
    common = ["aoe", "-i", str(project), "-o", str(out), "-m", "realesrgan/train.py"]
    err = _refused(_kit(*common, cwd=tmp_path), out)
    assert "--loop FILE" not in err and "--loop " not in err, err
    assert "the loop is not in the project" in err
    assert "a loop in an installed library cannot be instrumented" in err
    assert "copy the library into the project, or write the loop in the script" in err


def test_with_loop_main_is_checked_too(tmp_path: Path) -> None:
    project = _trainer_project(tmp_path)
    out = tmp_path / "out"
    common = ["aoe", "-i", str(project), "-o", str(out), "-m", "run.py", "--loop", "pkg/trainer.py"]
    proc = _kit(*common, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "run.py:6: kit: distributed training (dist.init_process_group)" in proc.stdout
    readme = (out / "proj_msft_aoe" / "KIT_README.md").read_text(encoding="utf-8")
    assert "- `run.py:6`: distributed training (dist.init_process_group)" in readme


MODEL = """import torch
import torch.nn as nn
from timm.data import Mixup


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.fc.weight.data.uniform_(-0.1, 0.1)  # initialisation: seeded, not in forward

    def forward(self, x):
        mask = torch.rand(x.shape, device=x.device) > 0.5
        noise = torch.randn_like(x)
        keep = torch.rand(x.shape, device="cpu").to(x.device)
        x.bernoulli_(0.5)
        return self.fc(x * mask + noise + keep)


def build(rate):
    return timm.create_model("vit", drop_path_rate=rate)


def no_aug():
    return Mixup(mixup_alpha=0.0, cutmix_alpha=0.0)
"""
CONFIG = "DROP_PATH_RATE = 0.1\nMIXUP = 0.0\n"
PRECISION_MAIN = """import torch

import config
from models.net import Net, build

model = Net()
mixup_fn = Mixup(mixup_alpha=0.8, cutmix_alpha=1.0)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x in data:
    optimizer.zero_grad()
    model(mixup_fn(x.cuda())).sum().backward()
    optimizer.step()
"""


def test_precision_warns_of_device_random_numbers_and_augmentation(tmp_path: Path) -> None:
    project = _project(
        tmp_path / "proj",
        {
            "train.py": PRECISION_MAIN,
            "config.py": CONFIG,
            "models/__init__.py": "",
            "models/net.py": MODEL,
            "unused.py": "import torch\nx = torch.rand(3, device='cuda')\n",  # never imported
        },
    )
    out = tmp_path / "out"
    proc = _kit("precision", "-i", str(project), "-o", str(out), "-m", "train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    readme = (out / "proj_msft_precision" / "KIT_README.md").read_text(encoding="utf-8")
    found = re.findall(r"^- `([^`]+)`: (\S+ ?\S*)", readme, re.M)
    assert [where for where, _ in found] == [
        "train.py:7",
        "config.py:1",
        "models/net.py:13",
        "models/net.py:14",
        "models/net.py:16",
        "models/net.py:21",
    ], readme
    assert "torch.rand: random numbers drawn on the device (device=x.device)" in readme
    assert "torch.randn_like: random numbers drawn on the device (in forward" in readme
    assert "mixup / cutmix is on (Mixup(...))" in readme
    assert "drop-path is on (DROP_PATH_RATE = 0.1)" in readme
    assert "drop-path is on (drop_path_rate=rate)" in readme
    # the terminal names the same lines (the input's) as the README
    for where, _ in found:
        assert f"WARNING {where}: kit: " in proc.stdout, where
    gpu = (out / "proj_gpu_precision" / "KIT_README.md").read_text(encoding="utf-8")
    assert "- `models/net.py:13`: torch.rand: random numbers drawn on the device" in gpu


def test_terminal_and_readme_give_the_same_input_line(tmp_path: Path) -> None:
    """The migration inserts ``import torch_npu`` above the warning's line: the README gave the
    kit tree's line, the terminal the input's."""
    source = (
        "import torch\n\nmodel = torch.compile(model)\nfor x in data:\n"
        "    model(x.cuda()).sum().backward()\n    optimizer.step()\n"
    )
    project = _project(tmp_path / "proj", {"train.py": source})
    out = tmp_path / "out"
    proc = _kit("precision", "-i", str(project), "-o", str(out), "-m", "train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "WARNING train.py:3: kit: torch.compile" in proc.stdout
    readme = (out / "proj_msft_precision" / "KIT_README.md").read_text(encoding="utf-8")
    assert "lines of the input" in readme
    assert "- `train.py:3`: torch.compile" in readme
