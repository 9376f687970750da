"""Issue 44: the -v target through a run and the unsupported_op.csv it writes. Two torch.cuda
calls whose torch.npu counterparts arrived in different releases (``get_device_limit`` in
2.6.0.post3 and 2.7.1, ``host_memory_stats`` in 2.7.1.post4, 2.9.0.post2 and 2.10.0): for a target
older than a counterpart the call is left as written with a version_gap row naming the first
release that has it; for the release that brought it and any newer one the call is migrated and
no row is written. And the operator-support list a target reads: its own, else the nearest older
one, else the oldest (``torch.export.Constraint`` is listed as unsupported up to 2.7.1,
``torch.fft.ifftshift`` from 2.11.0)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_fmk_transplt.commands.cli import main as run_main

SOURCE = """import torch

limit = torch.cuda.get_device_limit(0)
stats = torch.cuda.host_memory_stats()
"""
CALLS = ("get_device_limit", "host_memory_stats")
# -v -> {call left on torch.cuda: the first torch_npu release with its counterpart}
GAPS = {
    "2.6.0": {"get_device_limit": "2.6.0.post3", "host_memory_stats": "2.7.1.post4"},
    "2.6.0.post2": {"get_device_limit": "2.6.0.post3", "host_memory_stats": "2.7.1.post4"},
    "2.6.0.post3": {"host_memory_stats": "2.7.1.post4"},
    "2.7.1": {"host_memory_stats": "2.7.1.post4"},
    "2.9.0": {"host_memory_stats": "2.9.0.post2"},
    "2.9.0.post2": {},
    "2.10.0": {},
    "2.14.0": {},
}


OPERATORS = """import torch

c = torch.export.Constraint
y = torch.fft.ifftshift(torch.ones(4))
"""
# -v -> the operator rows: (API, the list that says it)
LISTED = {
    "2.1.0": [("torch.export.Constraint", "2.6.0")],
    "2.6.0": [("torch.export.Constraint", "2.6.0")],
    "2.7.1": [("torch.export.Constraint", "2.7.1")],
    "2.8.0": [],
    "2.11.0": [("torch.fft.ifftshift", "2.11.0")],
    "2.14.0": [("torch.fft.ifftshift", "2.13.0")],
}


def _run(tmp_path: Path, source: str, target: str) -> tuple[Path, list[dict[str, str]]]:
    """``source`` as the project's one file, migrated for ``target``: the migrated tree and the
    rows of its unsupported_op.csv."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "mem.py").write_text(source, encoding="utf-8")
    args = ["-q", "--no-cache", "-i", str(project), "-o", str(tmp_path / "out"), "-v", target]
    result = CliRunner().invoke(run_main, args)
    assert result.exit_code == 0, result.output
    tree = tmp_path / "out" / "proj_msft"
    with (tree / "unsupported_op.csv").open(encoding="utf-8", newline="") as fh:
        return tree, list(csv.DictReader(fh))


def _tip(call: str, needs: str, target: str) -> str:
    targets = target if ".post" in target else f"every {target} release"
    return (
        f"torch.npu.{call} needs torch_npu >= {needs} (this migration targets {targets}, "
        "set with -v): upgrade torch_npu, or remove the call"
    )


@pytest.mark.parametrize("target", GAPS)
def test_a_call_is_reported_below_its_release_and_migrated_from_it(
    tmp_path: Path, target: str
) -> None:
    tree, found = _run(tmp_path, SOURCE, target)
    rows = [(r["File"], r["OP"], r["Category"], r["Tips"], r["Action"], r["Rule"]) for r in found]
    gaps = GAPS[target]
    assert rows == [
        (
            "mem.py",
            f"torch.cuda.{call}",
            "version_gap",
            _tip(call, needs, target),
            "manual",
            "device_api.no_npu_counterpart",
        )
        for call, needs in gaps.items()
    ]
    output = (tree / "mem.py").read_text(encoding="utf-8")
    for call in CALLS:
        assert f"torch.{'cuda' if call in gaps else 'npu'}.{call}(" in output, (call, output)


@pytest.mark.parametrize("target", LISTED)
def test_a_target_reads_its_own_operator_list_or_the_nearest_older(
    tmp_path: Path, target: str
) -> None:
    _, found = _run(tmp_path, OPERATORS, target)
    rows = [(r["OP"], r["Category"], r["Action"], r["Rule"]) for r in found]
    assert rows == [
        (api, "unsupported_op", "manual", "operator_support.unsupported")
        for api, _ in LISTED[target]
    ]
    for row, (_, listed) in zip(found, LISTED[target]):
        assert row["Tips"].startswith(
            f"not supported on the NPU (torch_npu {listed} native API list)"
        ), row
