"""A synthetic model zoo from templates we wrote, for benchmarks/bench.py when no real
repository is given: per model a network, helpers, a dataset, an ``__init__``, a training and an
evaluation script, a README and a config (about 70% of the .py files without CUDA)."""

from __future__ import annotations

import random
from pathlib import Path

MODEL = '''"""{name}: a small {kind} network."""
import torch
import torch.nn as nn


class {cls}(nn.Module):
    def __init__(self, width: int = {width}) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width // 2), nn.ReLU()
        )
        self.head = nn.Linear(width // 2, {classes})

    def forward(self, x):
        return self.head(self.body(x))
'''
UTILS = '''"""Helpers of {name}."""
import math
import os


def cosine_lr(step: int, total: int, base: float = {lr}) -> float:
    return 0.5 * base * (1 + math.cos(math.pi * step / max(1, total)))


def checkpoint_path(root: str, epoch: int) -> str:
    return os.path.join(root, "{name}_%04d.pt" % epoch)


class AverageMeter:
    def __init__(self) -> None:
        self.sum = self.count = 0.0

    def update(self, value: float, n: int = 1) -> None:
        self.sum += value * n
        self.count += n

    @property
    def avg(self) -> float:
        return self.sum / max(1.0, self.count)
'''
DATA = '''"""Dataset of {name}."""
import torch
from torch.utils.data import Dataset


class Synthetic{cls}(Dataset):
    def __init__(self, size: int = {size}, width: int = {width}) -> None:
        g = torch.Generator().manual_seed({seed})
        self.x = torch.randn(size, width, generator=g)
        self.y = torch.randint(0, {classes}, (size,), generator=g)

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]
'''
TRAIN = '''"""Training entry point of {name} (single GPU, AMP)."""
import argparse

import torch
import torch.nn.functional as F
from torch.cuda.amp import GradScaler, autocast
from torch.utils.data import DataLoader

from .data import Synthetic{cls}
from .model import {cls}

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda:0")
parser.add_argument("--dist-backend", default="nccl")
parser.add_argument("--local_rank", type=int, default=0)


def main():
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.cuda.set_device(args.local_rank)
    model = {cls}().cuda()
    loader = DataLoader(Synthetic{cls}(), batch_size={batch}, shuffle=True, pin_memory=True)
    optimizer = torch.optim.SGD(model.parameters(), lr={lr})
    scaler = GradScaler()
    for epoch in range(2):
        for x, y in loader:
            x, y = x.cuda(non_blocking=True), y.to(args.local_rank)
            with autocast():
                loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        print("epoch", epoch, "loss", loss.item(), "mem", torch.cuda.max_memory_allocated())
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
'''
EVAL = '''"""Evaluation of {name}."""
import torch

from .model import {cls}


@torch.no_grad()
def evaluate(weights: str, batches):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = {cls}()
    model.load_state_dict(torch.load(weights, map_location="cuda:0"))
    model.to(device).eval()
    hits = total = 0
    for x, y in batches:
        hits += (model(x.to(device)).argmax(1) == y.to(device)).sum().item()
        total += y.numel()
    return hits / max(1, total)
'''
README = "# {name}\n\nA {kind} model of the benchmark zoo. Train with `python -m {name}.train`.\n"
CONFIG = "model: {name}\nwidth: {width}\nlr: {lr}\nbatch_size: {batch}\n"
# per model: 3 of 5 .py files without CUDA (model, utils, data) + __init__ = 70% of .py files
FILES = {
    "model.py": MODEL,
    "utils.py": UTILS,
    "data.py": DATA,
    "__init__.py": "",
    "train.py": TRAIN,
    "evaluate.py": EVAL,
    "README.md": README,
    "config.yaml": CONFIG,
}


def template_values(rnd: random.Random, i: int, name: str, cls: str) -> dict[str, object]:
    """The values the templates are filled with (drawn from ``rnd`` in this order)."""
    return dict(
        name=name,
        cls=cls,
        kind=rnd.choice(["mlp", "vision", "audio"]),
        width=rnd.choice([64, 128, 256]),
        classes=rnd.randint(2, 100),
        lr=rnd.choice([0.1, 0.01, 0.05]),
        size=rnd.choice([256, 512]),
        seed=i,
        batch=rnd.choice([16, 32, 64]),
    )


def generate(root: Path, files: int, seed: int = 0) -> Path:
    rnd = random.Random(seed)
    models = max(1, files // len(FILES))
    for i in range(models):
        name = f"model_{i:04d}"
        values = template_values(rnd, i, name, f"Net{i}")
        folder = root / name
        folder.mkdir(parents=True)
        for fname, template in FILES.items():
            (folder / fname).write_text(template.format(**values))
    return root
