"""--shard I/N and --merge-shards N: the parts of a run, merged, are the run.

A project migrated in three parts and merged gives the same tree and the same reports as one
run; a zoo migrated in two parts gives the same zoo summary; the split is stable; a missing or
mismatched part stops the merge with exit 2 and one line."""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import comparable
from openpyxl import load_workbook

from ms_fmk_transplt.run.shards import parse_shard, part_of

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "fixtures" / "projects" / "toolkit"
_STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ", re.M)


def tool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", "-q", "--no-cache", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def files_of(tree: Path) -> dict[str, Path]:
    return {p.relative_to(tree).as_posix(): p for p in tree.rglob("*") if not p.is_dir()}


def log_lines(path: Path, out: Path) -> list[str]:
    text = _STAMP.sub("", path.read_text(encoding="utf-8")).replace(str(out), "<out>")
    return [line for line in text.splitlines() if "completed successfully in" not in line]


def cells(path: Path) -> list:
    return [[[c.value for c in row] for row in ws.iter_rows()] for ws in load_workbook(path)]


def test_parts_merged_are_the_single_run(tmp_path: Path) -> None:
    single, parts = tmp_path / "single", tmp_path / "parts"
    assert tool("-i", str(PROJECT), "-o", str(single)).returncode == 0
    owned: list[set[str]] = []
    for i in (1, 2, 3):
        done = tool("-i", str(PROJECT), "-o", str(parts), "--shard", f"{i}/3")
        assert done.returncode == 0, done.stderr
        part = files_of(parts / f"toolkit_msft.shard-{i}-of-3")
        owned.append({p for p in part if part_of(p, 3) == i})
        assert all(part_of(p, 3) == i for p in part if "/" in p or p.endswith(".py"))
    assert not (owned[0] & owned[1] or owned[1] & owned[2] or owned[0] & owned[2])
    done = tool("-i", str(PROJECT), "-o", str(parts), "--merge-shards", "3")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in parts.iterdir()) == ["toolkit_msft"]  # parts removed
    a, b = files_of(single / "toolkit_msft"), files_of(parts / "toolkit_msft")
    assert sorted(a) == sorted(b)
    for rel, path in a.items():
        if rel.endswith(".txt"):
            assert log_lines(path, single) == log_lines(b[rel], parts), rel
        elif rel.endswith(".xlsx"):
            assert cells(path) == cells(b[rel]), rel
        else:
            assert comparable(path) == comparable(b[rel]), rel  # (report.html: not its minute)


def test_zoo_parts_merged_give_the_zoo_summary(tmp_path: Path) -> None:
    zoo = tmp_path / "zoo"
    for name in ("amp_loop", "ddp", "imagenet", "streams", "notebooks"):
        shutil.copytree(ROOT / "fixtures" / "projects" / name, zoo / name)
    single, parts = tmp_path / "single", tmp_path / "parts"
    assert tool("-i", str(zoo), "-o", str(single), "--zoo").returncode == 0
    for i in (1, 2):
        done = tool("-i", str(zoo), "-o", str(parts), "--zoo", "--shard", f"{i}/2")
        assert done.returncode == 0, done.stderr
    assert tool("-i", str(zoo), "-o", str(parts), "--zoo", "--merge-shards", "2").returncode == 0
    with (
        (single / "zoo_zoo_summary.csv").open() as fa,
        (parts / "zoo_zoo_summary.csv").open() as fb,
    ):
        rows_a = [r[:-1] for r in csv.reader(fa)]  # the last column is the output path
        rows_b = [r[:-1] for r in csv.reader(fb)]
    assert rows_a == rows_b and len(rows_a) == 6
    models = sorted(p.name for p in parts.iterdir() if p.is_dir())
    assert models == sorted(
        f"{m}_msft" for m in ("amp_loop", "ddp", "imagenet", "streams", "notebooks")
    )
    assert not list(parts.glob("*.shard-*"))
    assert (parts / "zoo_zoo_report.html").read_text().count("report.html") == 5


def test_missing_or_mismatched_parts_stop_the_merge(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert tool("-i", str(PROJECT), "-o", str(out), "--shard", "1/2").returncode == 0
    done = tool("-i", str(PROJECT), "-o", str(out), "--merge-shards", "2")
    part2 = out / "toolkit_msft.shard-2-of-2"
    assert done.returncode == 2
    assert done.stderr == (
        f"ms_fmk_transplt: error: {part2}: part 2 of 2 is missing: run with --shard 2/2 first\n"
    )
    assert tool("-i", str(PROJECT), "-o", str(out), "--shard", "2/2", "-s").returncode == 0
    done = tool("-i", str(PROJECT), "-o", str(out), "--merge-shards", "2")
    assert done.returncode == 2 and "migrated with different options" in done.stderr
    assert not (out / "toolkit_msft").exists()
    assert (out / "toolkit_msft.shard-1-of-2").is_dir()  # nothing lost


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shard", "0/3"], "--shard: '0/3': I must be between 1 and N"),
        (["--shard", "2"], "--shard: '2' is not I/N (e.g. 2/4)"),
        (
            ["--shard", "1/2", "--merge-shards", "2"],
            "--shard and --merge-shards cannot be combined",
        ),
    ],
)
def test_bad_shard_options(tmp_path: Path, args: list[str], message: str) -> None:
    done = tool("-i", str(PROJECT), "-o", str(tmp_path / "out"), *args)
    assert done.returncode == 2
    assert done.stderr.startswith(f"ms_fmk_transplt: error: {message}")
    assert not (tmp_path / "out").exists()


def test_the_split_is_stable() -> None:
    """A file's part depends on its path only (a CI matrix gets the same split everywhere)."""
    # 1 + sha1(path) mod N, as documented: these values must never change
    paths = ("train.py", "models/resnet.py", "a/b/c.py", "README.md")
    assert [part_of(p, 4) for p in paths] == [4, 2, 2, 2]
    assert part_of("train.py", 1) == 1
    counts = [0] * 4
    for i in range(4000):
        counts[part_of(f"pkg/mod_{i}.py", 4) - 1] += 1
    assert min(counts) > 900  # about even
    assert parse_shard("3/8") == (3, 8)
