"""A rule pattern (--select / --ignore, ``# msft: ignore[...]``, the rule pages they name) is an id
or an id prefix ending at a dot: ``distributed`` is distributed.* and never distributed_mode.*.
One matcher, rule_catalog.rule_matches; here through real runs of a project that has rows of
both families (comm.py: distributed.nccl_backend; train.py under ``distributed -m``:
distributed_mode.*)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from ms_fmk_transplt.catalogue.rule_catalog import rule_matches
from ms_fmk_transplt.catalogue.rule_pages import ids_of

TRAIN = """\
import torch
from torch.utils.data import DataLoader


def main(dataset):
    model = torch.nn.Linear(4, 2)
    model = model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(dataset, batch_size=8, shuffle=True){comment}
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
"""
COMM = """\
import torch.distributed as dist

dist.init_process_group(backend="nccl", init_method="env://"){comment}
"""
REPORTS = ("change_list.csv", "unsupported_op.csv", "advice.csv")


def _rows(tmp_path: Path, *options: str, comment: str = "") -> list[tuple[str, str]]:
    """(file, rule) of every report row of a run with ``options``, ``comment`` ending the
    DataLoader line of train.py and the nccl line of comm.py."""
    project, out = tmp_path / "p", tmp_path / "out"
    project.mkdir(exist_ok=True)
    (project / "train.py").write_text(TRAIN.format(comment=comment), encoding="utf-8")
    (project / "comm.py").write_text(COMM.format(comment=comment), encoding="utf-8")
    cmd = [sys.executable, "-m", "ms_fmk_transplt", "-q", "--no-cache", "--overwrite"]
    args = ["-i", str(project), "-o", str(out), *options, "distributed", "-m", "train.py"]
    done = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    rows = []
    for name in REPORTS:
        with open(out / "p_msft" / name, encoding="utf-8", newline="") as fh:
            rows += [(row["File"], row["Rule"]) for row in csv.DictReader(fh)]
    return rows


def _family(rows: list[tuple[str, str]], family: str) -> list[tuple[str, str]]:
    return [row for row in rows if row[1].startswith(family + ".")]


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str]]:
    rows = _rows(tmp_path_factory.mktemp("all"))
    assert _family(rows, "distributed") == [("comm.py", "distributed.nccl_backend")]
    assert {rule for _, rule in _family(rows, "distributed_mode")} >= {
        "distributed_mode.init",
        "distributed_mode.ddp",
        "distributed_mode.sampler",
    }
    return rows


def test_ignore_a_family_leaves_the_family_whose_name_it_begins(
    tmp_path: Path, everything: list[tuple[str, str]]
) -> None:
    rows = _rows(tmp_path, "--ignore", "distributed")
    assert not _family(rows, "distributed")
    assert _family(rows, "distributed_mode") == _family(everything, "distributed_mode")


def test_select_a_family_takes_only_that_family(
    tmp_path: Path, everything: list[tuple[str, str]]
) -> None:
    rows = _rows(tmp_path, "--select", "distributed")
    assert _family(rows, "distributed") == _family(everything, "distributed")
    assert not _family(rows, "distributed_mode")


def test_an_ignore_comment_naming_a_family_leaves_the_other(
    tmp_path: Path, everything: list[tuple[str, str]]
) -> None:
    rows = _rows(tmp_path, comment="  # msft: ignore[distributed]")
    assert not _family(rows, "distributed")  # the nccl line is kept as written
    assert ("train.py", "distributed_mode.sampler") in rows  # the DataLoader line is not
    assert _family(rows, "distributed_mode") == _family(everything, "distributed_mode")
    rows = _rows(tmp_path, comment="  # msft: ignore[distributed_mode.sampler]")
    assert ("train.py", "distributed_mode.sampler") not in rows
    assert _family(rows, "distributed") == _family(everything, "distributed")


def test_the_rule_pages_a_prefix_names() -> None:
    named = ids_of("distributed")
    assert "distributed.nccl_backend" in named
    assert all(i.startswith("distributed.") for i in named)
    assert ids_of("distributed_mode.ddp") == ["distributed_mode.ddp"]
    assert ids_of("distributed.nccl") == []  # a prefix ends at a dot, not inside a name


@pytest.mark.parametrize(
    ("rule", "patterns", "matched"),
    [
        ("distributed.nccl_backend", ("distributed",), True),
        ("distributed", ("distributed",), True),
        ("distributed_mode.ddp", ("distributed",), False),
        ("distributed.nccl_backend", ("distributed.nccl",), False),
        ("distributed_mode.ddp", ("tensor_methods", "distributed_mode.ddp"), True),
        ("distributed_mode.ddp", (), False),
    ],
)
def test_rule_matches(rule: str, patterns: tuple[str, ...], matched: bool) -> None:
    assert rule_matches(rule, patterns) is matched
