"""CI budget check: a cold migration's time as a ratio to the floor (read every .py file,
``ast.parse`` it, write a copy: benchmarks/bench.py), on a fixed sample of real-shaped code,
against the ratio recorded in benchmarks/budget.json.

    python benchmarks/budget.py               # measure, compare, exit 1 past the margin
    python benchmarks/budget.py --record 7    # 7 such measures: their median to budget.json

The sample is built at run time from what the repository holds, nothing fetched
(benchmarks/real_shaped.py): 1,000 .py files of real size (some 12 MB, median about 10 KB,
up to ~60 KB; real zoos average ~20 KB a file), each a concatenation of the fixtures' inputs
(fixtures/projects/*, fixtures/rules/*/*.py) and the synthetic zoo's templates that still
parses, a third of them with CUDA code to migrate (a few with many CUDA lines), the others
without. On the fixtures as they are (under 1 KB a file) a cold run is mostly start-up,
worker pool and reports, and a rule doubling the per-file cost moved the ratio by a third;
here the engine's per-file work dominates, as on a real repository (cold/floor about 4;
huggingface/diffusers ~3.7).
The same checkout always builds the same bytes (the sample's sha256 is printed, and recorded
beside the ratio).

Each round measures the floor in ``--jobs`` processes (the faster of 2: a hiccup in
the smaller measure counts double), then a cold run of the tool (``--no-cache``,
``-j JOBS``) in a fresh process; the ratio is the median over the rounds
(``--rounds``, 5) of each round's cold run over its floor, so a slow moment of a shared machine
hits both sides of a ratio. Both write into a temporary folder in memory where there is one
(/dev/shm): the disk's write times swing with what other processes write.

The check fails (exit 1) only when the measured ratio is more than ``margin`` times the
recorded one (both in budget.json): noise does not block a landing, a change that makes the
engine much dearer does. Also exit 1 if the tool's run fails. Timed unit tests are not wanted;
this is the benchmark, with its baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from bench import floor_all, migrate  # noqa: E402
from real_shaped import build  # noqa: E402

RECORD = HERE / "budget.json"


def build_sample(target: Path, repo: Path = REPO) -> list[Path]:
    """The sample under ``target`` (which must not exist): its .py files, sorted."""
    return build(target, repo)


def digest(root: Path, files: list[Path]) -> str:
    """sha256 of the sample: each file's path (relative to ``root``) and bytes, in order."""
    sha = hashlib.sha256()
    for path in files:
        sha.update(path.relative_to(root).as_posix().encode() + b"\0")
        sha.update(path.read_bytes() + b"\0")
    return sha.hexdigest()


def within(measured: float, recorded: float, margin: float) -> bool:
    """The verdict: the measured ratio is at most ``margin`` times the recorded one."""
    return measured <= recorded * margin


def _floor(root: Path, files: list[Path], jobs: int, work: Path) -> float:
    target = work / "floor"
    shutil.rmtree(target, ignore_errors=True)
    seconds = floor_all(root, [str(p) for p in files], jobs, target)
    shutil.rmtree(target, ignore_errors=True)
    return seconds


def measure(root: Path, files: list[Path], work: Path, jobs: int, rounds: int) -> dict:
    """Floor and cold run, interleaved, ``rounds`` times: their medians and the ratio."""
    floors: list[float] = []
    colds: list[float] = []
    for _ in range(rounds):
        floors.append(min(_floor(root, files, jobs, work) for _ in range(2)))
        run = migrate(root, work / "cold", jobs, None)
        if run["exit"] not in (0, 1):
            raise RuntimeError(f"the tool's run failed (exit {run['exit']})")
        colds.append(run["s"])
    ratio = statistics.median(c / f for c, f in zip(colds, floors))
    floor, cold = statistics.median(floors), statistics.median(colds)
    return {"floor": floor, "cold": cold, "ratio": ratio, "floors": floors, "colds": colds}


def _commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def record(results: list[dict], sample: dict, jobs: int, margin: float) -> None:
    plain = {
        "ratio": round(statistics.median(r["ratio"] for r in results), 3),
        "margin": margin,
        "jobs": jobs,
        "rounds": len(results[0]["colds"]),
        "measures": [round(r["ratio"], 2) for r in results],
        "commit": _commit(),
        "date": datetime.date.today().isoformat(),
        "sample": sample,
        "how": "python benchmarks/budget.py --record N: the median of N measures (each the "
        "median over its rounds of the cold run's time over the floor's); the check fails past "
        "margin x ratio",
    }
    RECORD.write_text(json.dumps(plain, indent=2) + "\n", encoding="utf-8")
    print(f"recorded ratio {plain['ratio']} in {RECORD.relative_to(REPO)}")


def _in_memory() -> str | None:
    """A folder in memory (Linux's /dev/shm) when there is one: the disk's write times, which
    other processes' writes make swing several-fold, are left out of both measures."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def _show(result: dict, sample: dict, jobs: int) -> None:
    rounds = ", ".join(f"{c / f:.2f}" for c, f in zip(result["colds"], result["floors"]))
    print(
        f"budget: sample of {sample['files']} .py files ({sample['bytes'] / 1e6:.2f} MB, sha256 "
        f"{sample['sha256']}), -j {jobs}, medians of {len(result['colds'])} rounds: cold "
        f"{result['cold']:.2f}s, floor {result['floor']:.2f}s, cold/floor {result['ratio']:.2f} "
        f"(rounds: {rounds})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--record", type=int, metavar="N", help="N measures to budget.json")
    args = parser.parse_args()
    recorded = json.loads(RECORD.read_text(encoding="utf-8")) if RECORD.exists() else None
    work = Path(tempfile.mkdtemp(prefix="msft_budget_", dir=_in_memory()))
    try:
        root = work / "sample"
        files = build_sample(root)
        size = sum(p.stat().st_size for p in files)
        sample = {"files": len(files), "bytes": size, "sha256": digest(root, files)[:16]}
        results = []
        for _ in range(args.record or 1):
            results.append(measure(root, files, work, args.jobs, args.rounds))
            _show(results[-1], sample, args.jobs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.record:
        record(results, sample, args.jobs, recorded["margin"] if recorded else 1.5)
        return 0
    result = results[0]
    if recorded is None:
        print(f"no recorded ratio ({RECORD.name} is missing): nothing to compare with")
        return 1
    ok = within(result["ratio"], recorded["ratio"], recorded["margin"])
    print(
        f"recorded cold/floor {recorded['ratio']} ({recorded['commit']}, {recorded['date']}, "
        f"-j {recorded['jobs']}); limit {recorded['margin']}x = "
        f"{recorded['ratio'] * recorded['margin']:.2f}: {'PASS' if ok else 'FAIL'}"
    )
    if recorded.get("sample", {}).get("sha256") != sample["sha256"]:
        print("the sample differs from the recorded one (fixtures changed): compare with care")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
