"""The terminal's "Top open work" table counts rows per API, not per text: a setting a launch
file's row names with its lines ("device: cuda (line 12)") is one entry for all its rows, and
the table's counts are rows of unsupported_op.csv (the run's numbers unchanged)."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

from helpers import tool

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "fixtures" / "projects" / "ddp"


def _top_table(stdout: str) -> dict[str, int]:
    """API -> Count of the printed table (a long API wraps onto the next lines)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "Top open work" in line)
    rows: list[list[str]] = []
    for line in lines[start:]:
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) != 3:
            continue
        if cells[2]:
            rows.append([cells[0], cells[2]])
        elif rows:
            rows[-1][0] += (" " if rows[-1][0].endswith(",") else "") + cells[0]
    return {api: int(count) for api, count in rows}


def test_one_setting_in_many_files_is_one_entry(tmp_path: Path) -> None:
    project = tmp_path / "ddp"
    shutil.copytree(PROJECT, project)
    for i in range(6):  # `device: cuda` at a different line of each recipe, twice in one
        padding = "".join(f"key{j}: {j}\n" for j in range(i))
        twice = "eval:\n  device: cuda\n" if i == 5 else ""
        (project / "configs" / f"recipe{i}.yaml").write_text(f"{padding}device: cuda\n{twice}")
    proc = tool("-i", str(project), "-o", str(tmp_path / "o"), "--no-cache", "--color", "never")
    assert proc.returncode == 0, proc.stderr
    table = _top_table(proc.stdout)
    assert not any("(line" in api for api in table), table
    with (tmp_path / "o" / "ddp_msft" / "unsupported_op.csv").open(encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f)]
    recipes = [r for r in rows if r["File"].startswith("configs/recipe")]
    # the five files setting it once fold into one row for the run (unsupported.launch_config);
    # the file setting it twice keeps its own row: two rows whose texts differ by their lines
    assert len({r["OP"] for r in recipes}) == len(recipes) == 2  # the CSV keeps its lines
    assert table["device: cuda"] == 2  # both rows, one entry
    assert sum(table.values()) <= len(rows)  # rows counted, each once
