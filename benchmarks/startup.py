"""Benchmark: start-up of the commands a person or a pre-commit hook runs most, against a bare
Python started in the same run.

    python benchmarks/startup.py              # 11 runs of each command, interleaved
    python benchmarks/startup.py --repeat 21
    python benchmarks/startup.py --no-pyc     # every module compiled on every run

Each command runs in a fresh process with this Python and this checkout first on PYTHONPATH
(the baseline too, so both pay the same interpreter and ``site`` start-up). Byte-code caches
are used, as an installed tool uses them, but kept in a temporary folder
(``PYTHONPYCACHEPREFIX``; ``PYTHONDONTWRITEBYTECODE`` is unset for the runs), so the checkout
gets no ``__pycache__``; one run of each command is made first and not counted (it writes
them). ``--no-pyc`` measures without them (every module compiled on every run, as with
``PYTHONDONTWRITEBYTECODE=1``: the modules without a cache, as a checkout's, are compiled on
every run). The runs are interleaved (one of
each command per round), so load on a shared machine hits them alike. Measured, as the median
of ``--repeat`` wall times and as the difference over the baseline's median:

* baseline: ``python -c pass``;
* ``ms_fmk_transplt --version``;
* ``ms_fmk_transplt --help``;
* ``ms_fmk_transplt --check`` of one clean file (a small training script already written for
  the NPU: nothing to report);
* ``ms_fmk_transplt --check`` of one file with findings (fixtures/projects/imagenet/main.py).

The last lines compare the differences with the targets: ``--version`` and ``--help`` <= 0.1 s
over the baseline, each one-file ``--check`` <= 0.2 s over it. Exit 1 if a target is missed.
Read the differences, not the absolute times: machines differ and are noisy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FINDINGS = ROOT / "fixtures" / "projects" / "imagenet" / "main.py"
TARGETS = {"version": 0.1, "help": 0.1, "check clean": 0.2, "check findings": 0.2}
CLEAN = '''"""A small training loop already written for the NPU."""

import torch
import torch_npu
from torch import nn


def train(steps: int = 10) -> float:
    device = torch.device("npu:0")
    model = nn.Linear(16, 4).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = torch.zeros(())
    for _ in range(steps):
        batch = torch.randn(8, 16, device=device)
        loss = model(batch).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return float(loss)


if __name__ == "__main__":
    print(train(), torch_npu.__name__)
'''


def commands(clean: Path) -> dict[str, list[str]]:
    tool = [sys.executable, "-m", "ms_fmk_transplt"]
    return {
        "baseline": [sys.executable, "-c", "pass"],
        "version": [*tool, "--version"],
        "help": [*tool, "--help"],
        "check clean": [*tool, "--check", str(clean)],
        "check findings": [*tool, "--check", str(FINDINGS)],
    }


def _run(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, check=False)
    return time.perf_counter() - start


def measure(repeat: int, work: Path, pyc: bool) -> dict[str, float]:
    """Median wall seconds of each command, the runs interleaved."""
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), path) if p)}
    env["MS_FMK_TRANSPLT_CACHE"] = "off"
    env.pop("PYTHONPYCACHEPREFIX", None)
    if pyc:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # what is cached already is still read
    clean = work / "clean_train.py"
    clean.write_text(CLEAN, encoding="utf-8")
    cmds = commands(clean)
    for cmd in cmds.values():  # warm-up: byte-code caches, the file system cache
        _run(cmd, env)
    times: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(repeat):
        for name, cmd in cmds.items():
            times[name].append(_run(cmd, env))
    return {name: statistics.median(values) for name, values in times.items()}


def report(medians: dict[str, float], repeat: int, pyc: bool) -> bool:
    base = medians["baseline"]
    caches = "with byte-code caches" if pyc else "no byte-code caches"
    print(f"start-up, {caches}, median of {repeat} runs each (seconds; +: over `python -c pass`)")
    for name, value in medians.items():
        extra = "" if name == "baseline" else f"  +{value - base:.3f}"
        print(f"  {name:<15} {value:.3f}{extra}")
    ok = True
    for name, target in TARGETS.items():
        over = medians[name] - base
        met = over <= target
        ok = ok and met
        print(f"{'ok  ' if met else 'MISS'} {name}: +{over:.3f}s <= +{target}s")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=11, help="runs of each command")
    parser.add_argument("--no-pyc", action="store_true", help="no byte-code caches")
    args = parser.parse_args()
    repeat = max(1, args.repeat)
    with tempfile.TemporaryDirectory(prefix="msft_startup_") as work:
        medians = measure(repeat, Path(work), not args.no_pyc)
    return 0 if report(medians, repeat, not args.no_pyc) else 1


if __name__ == "__main__":
    sys.exit(main())
