"""The terminal summary (report/summary.py) of a real run, rendered by rich at 80 columns: an
API name wider than its column is wrapped after a dot, never inside an identifier."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from ms_fmk_transplt.records import RunOptions
from ms_fmk_transplt.report.summary import show
from ms_fmk_transplt.run.pipeline import run

LONG = "torch.distributed.tensor.parallel.parallelize_module"  # 52 characters
SHORT = "torch.cuda.comm.reduce_add_coalesced"
SOURCE = f"""import torch
from torch.distributed.tensor.parallel import parallelize_module
m = torch.nn.Linear(2, 2).cuda()
m = parallelize_module(m, None, {{}})
y = {SHORT}([m.weight])
"""


def rendered(tmp_path: Path, width: int) -> list[str]:
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    (project / "train.py").write_text(SOURCE)
    out = tmp_path / f"out{width}"
    result = run(RunOptions(input=str(project), output=str(out), use_cache=False))
    console = Console(width=width, file=io.StringIO(), color_system=None, record=True)
    show(result, console)
    return console.export_text().splitlines()


@pytest.mark.parametrize("width", [80, 60])
def test_api_names_break_after_a_dot_not_inside_an_identifier(tmp_path: Path, width: int) -> None:
    """At 80 columns the table folded `parallelize_modul`/`e`."""
    lines = rendered(tmp_path, width)
    start = next(i for i, line in enumerate(lines) if "Top open work" in line)
    table = lines[start : next(i for i in range(start, len(lines)) if lines[i].startswith("└"))]
    assert all(len(line) <= width for line in table)
    cells = [line.split("│")[1].strip() for line in table if line.startswith("│")]
    words = {w for name in (LONG, SHORT) for w in name.split(".")}
    for cell in cells:  # each line of the API column: whole identifiers
        assert set(cell.rstrip(".").split(".")) <= words, cell
    assert "".join(cells) in (LONG + SHORT, SHORT + LONG)  # each name whole, in order
    if width == 80:  # a name that fits keeps its line (the near miss)
        assert SHORT in cells


def test_dotted_lines() -> None:
    from ms_fmk_transplt.report.summary import dotted_lines

    assert dotted_lines(LONG, 80) == [LONG]
    assert dotted_lines(LONG, 34) == ["torch.distributed.tensor.parallel.", "parallelize_module"]
    assert dotted_lines("a.verylongidentifier", 5) == ["a.", "verylongidentifier"]  # rich folds it
