"""What a library's lines are for --deps / --library (scan/library_lines.py): a CUDA test's own
line, an early exit without CUDA, an annotation or isinstance, a "cuda" string that is a path
or a message, an option compared with None, a decorator that works without CUDA. Each case is
a function of one fake library analysed with ``--analyse --library``; library_api.csv is read
back."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

LIBRARY = """\
import os
import torch


def early_exit():
    if not torch.cuda.is_available():
        return 0
    return torch.empty(1, device="cuda")


def early_exit_on_tensor(x):
    if not x.is_cuda:
        return x
    return x.cuda()


def annotated(scaler: torch.cuda.amp.GradScaler = None):
    return scaler


def type_check(x):
    return isinstance(x, torch.cuda.FloatTensor)


def autocast_probe(x):
    if torch.is_autocast_enabled():
        return x.float()
    return x


def kernel_path():
    return os.path.join("cuda", "kernel.cu")


def message(log):
    log.info("cuda")
    return ["cuda", "cpu"]


def option_given(gpu=None):
    if gpu is not None:
        torch.cuda.set_device(gpu)
    return gpu


def device_default():
    device = "cuda"
    return torch.zeros(2).to(device)


@torch.cuda.amp.custom_fwd
def decorated(x):
    return x * 2


def direct(x):
    return x.cuda()
"""


@pytest.fixture(scope="module")
def kinds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("lines")
    package = base / "src" / "linelib"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(LIBRARY, encoding="utf-8")
    out = base / "out"
    subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", "--analyse", "--library"]
        + ["-i", str(package), "-o", str(out), "-q", "--no-cache"],
        check=True,
        cwd=ROOT,
    )
    (api_csv,) = out.glob("*/library_api.csv")
    with api_csv.open(encoding="utf-8", newline="") as f:
        return {row["API"].rpartition(".")[2]: row["Kind"] for row in csv.DictReader(f)}


@pytest.mark.parametrize(
    ("function", "kind"),
    [
        ("early_exit", "CPU path on the NPU"),  # the rest of the block is behind the test
        ("early_exit_on_tensor", "CPU path on the NPU"),
        ("option_given", "needs CUDA (behind a test)"),  # `gpu is not None`: an option
        ("device_default", "needs CUDA"),  # device = "cuda": a device
        ("direct", "needs CUDA"),
    ],
)
def test_a_function_that_reaches(function: str, kind: str, kinds: dict[str, str]) -> None:
    assert kinds.get(function) == kind


@pytest.mark.parametrize(
    "function",
    ["annotated", "type_check", "autocast_probe", "kernel_path", "message", "decorated"],
)
def test_a_function_that_does_not(function: str, kinds: dict[str, str]) -> None:
    assert function not in kinds
