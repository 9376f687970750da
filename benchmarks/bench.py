"""Benchmark: how fast a model zoo migrates, as ratios measured in one run on one machine.

    python benchmarks/bench.py                   # synthetic zoo of 1000 files
    python benchmarks/bench.py --files 3000 --jobs 2
    python benchmarks/bench.py --input PATH      # any folder instead of the synthetic zoo

Reports wall time, files/s and MB/s of ms_fmk_transplt with -j 1 and -j N (cold, no cache), a
cold run that fills the cache and a warm (cached) re-run, next to the reference costs of merely
copying the tree and of libcst-parsing every .py file; peak RSS of each run; the latency of
the pre-commit check hook on one file; and, for flat memory, the peak RSS on a zoo four times
larger. Absolute times are noisy on shared machines:
read the ratios.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# -- synthetic zoo: templates we wrote; ~70% of the files have no CUDA ---------------------
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


def generate(root: Path, files: int, seed: int = 0) -> Path:
    rnd = random.Random(seed)
    models = max(1, files // len(FILES))
    for i in range(models):
        name = f"model_{i:04d}"
        values = dict(
            name=name,
            cls=f"Net{i}",
            kind=rnd.choice(["mlp", "vision", "audio"]),
            width=rnd.choice([64, 128, 256]),
            classes=rnd.randint(2, 100),
            lr=rnd.choice([0.1, 0.01, 0.05]),
            size=rnd.choice([256, 512]),
            seed=i,
            batch=rnd.choice([16, 32, 64]),
        )
        folder = root / name
        folder.mkdir(parents=True)
        for fname, template in FILES.items():
            (folder / fname).write_text(template.format(**values))
    return root


# -- measurements ----------------------------------------------------------------------------
def tree_size(root: Path) -> tuple[int, int, int]:
    files = [p for p in root.rglob("*") if p.is_file()]
    return (
        len(files),
        sum(1 for p in files if p.suffix == ".py"),
        sum(p.stat().st_size for p in files),
    )


def timed_tool(args: list[str]) -> tuple[float, int, int]:
    """(seconds, peak RSS in KiB of the tool and its workers, exit code), in a fresh process."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter(); rc = subprocess.run(sys.argv[1:]).returncode\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(time.perf_counter() - t, rss, rc)\n"
    )
    cmd = [sys.executable, "-c", probe, sys.executable, "-m", "ms_fmk_transplt", "-q", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()
    return float(out[-3]), int(out[-2]), int(out[-1])


def parse_all(root: Path) -> float:
    import libcst as cst

    start = time.perf_counter()
    for path in root.rglob("*.py"):
        try:
            cst.parse_module(path.read_bytes())
        except Exception:  # noqa: BLE001
            pass
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--input", type=Path, help="benchmark this folder instead")
    parser.add_argument("--files", type=int, default=1000, help="size of the synthetic zoo")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-scale", action="store_true", help="skip the 4x memory run")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="msft_bench_"))
    try:
        zoo = args.input.resolve() if args.input else generate(work / "zoo", args.files)
        files, py, size = tree_size(zoo)
        mb = size / 1e6
        print(f"input: {zoo} — {files} files ({py} .py), {mb:.1f} MB; jobs N = {args.jobs}")

        start = time.perf_counter()
        shutil.copytree(zoo, work / "copy", symlinks=True)
        copy = time.perf_counter() - start
        parse = parse_all(zoo)
        out = work / "out"
        runs = {}
        runs["-j 1 cold"] = timed_tool(
            ["-i", str(zoo), "-o", str(out / "a"), "-j", "1", "--no-cache"]
        )
        runs[f"-j {args.jobs} cold"] = timed_tool(
            ["-i", str(zoo), "-o", str(out / "b"), "-j", str(args.jobs), "--no-cache"]
        )
        cache = work / "cache"
        runs[f"-j {args.jobs} cold, filling cache"] = timed_tool(
            ["-i", str(zoo), "-o", str(out / "c"), "-j", str(args.jobs), "--cache-dir", str(cache)]
        )
        runs[f"-j {args.jobs} warm (cached)"] = timed_tool(
            ["-i", str(zoo), "-o", str(out / "d"), "-j", str(args.jobs), "--cache-dir", str(cache)]
        )

        print(
            f"\nreference: copy tree {copy:.2f}s; libcst parse of every .py {parse:.2f}s "
            f"(1 process)\n"
        )
        print("| run | wall s | files/s | MB/s | × copy | × parse | peak RSS MiB | exit |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for name, (seconds, rss, rc) in runs.items():
            print(
                f"| {name} | {seconds:.2f} | {files / seconds:.0f} | {mb / seconds:.2f} | "
                f"{seconds / copy:.1f} | {seconds / parse:.2f} | {rss / 1024:.0f} | {rc} |"
            )
        j1, jn = runs["-j 1 cold"][0], runs[f"-j {args.jobs} cold"][0]
        warm = runs[f"-j {args.jobs} warm (cached)"][0]
        print(
            f"\nspeed-up -j {args.jobs} over -j 1: {j1 / jn:.2f}x; warm over cold: "
            f"{jn / warm:.1f}x; original tool (~1 file/s, serial) vs -j {args.jobs}: "
            f"{files / jn:.0f}x"
        )
        one = work / "one.py"
        one.write_text(TRAIN.format(name="m", cls="Net", width=64, classes=4, lr=0.1, batch=8))
        latencies = []
        for _ in range(5):
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "ms_fmk_transplt", "--check", "-q", str(one)],
                capture_output=True,
                check=False,
            )
            latencies.append(time.perf_counter() - start)
        latencies.sort()
        print(
            f"pre-commit check hook, one file: median {latencies[2]:.2f}s "
            f"(min {latencies[0]:.2f}s, 5 runs; target <= 0.5s)"
        )
        if not args.input and not args.no_scale:
            big = generate(work / "zoo4", args.files * 4, seed=1)
            seconds, rss, _ = timed_tool(
                ["-i", str(big), "-o", str(out / "e"), "-j", "1", "--no-cache"]
            )
            print(
                f"memory: peak RSS {runs['-j 1 cold'][1] / 1024:.0f} MiB for {files} files, "
                f"{rss / 1024:.0f} MiB for {tree_size(big)[0]} files (-j 1): "
                f"ratio {rss / max(1, runs['-j 1 cold'][1]):.2f}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
