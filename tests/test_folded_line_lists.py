"""A folded row ("5 uses in this file (lines 9, 10, ...)") lists its lines in the numbering of
its own Start Line, in every mode: the migrated file's in a run (a .py file and a notebook cell
alike), the input's with --analyse, --check and --diff. The file has `import torch_npu` inserted
above the folded lines, so the two numberings differ by one."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from helpers import tool

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "fixtures" / "rules" / "device_strings.not_a_device" / "accelerator_flow.py"
FOLDED = re.compile(r"^\d+ uses in this file \(lines? ([\d, ]+)")
INPUT_LINES = [8, 9, 13, 14, 26]  # accelerator="cuda" in the input
MIGRATED_LINES = [9, 10, 14, 15, 27]  # below the inserted `import torch_npu`


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("folded") / "proj"
    root.mkdir()
    source = CASE.read_text()
    (root / "train.py").write_text(source)
    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": []}
    notebook = {
        "cells": [{**cell, "source": source.splitlines(keepends=True)}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (root / "explore.ipynb").write_text(json.dumps(notebook, indent=1))
    return root


def _listed(text: str) -> list[int]:
    found = FOLDED.match(text)
    assert found, text
    return [int(x) for x in found.group(1).split(", ")]


def _folded_csv_rows(csv_path: Path) -> dict[str, tuple[int, list[int], str]]:
    """File -> (Start Line, the lines its Tips list, Tips) of the accelerator row."""
    with csv_path.open(newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["Rule"] == "device_strings.not_a_device"]
    out = {}
    for r in rows:
        tip_lines = r["Tips"].split(":", 1)[0].removeprefix("lines ")
        out[r["File"]] = (int(r["Start Line"]), [int(x) for x in tip_lines.split(", ")], r["Tips"])
    return out


def _expected(rows: dict[str, tuple[int, list[int], str]], lines: list[int]) -> None:
    assert set(rows) == {"train.py", "explore.ipynb#cell0"}
    for file, (start, listed, tip) in rows.items():
        assert listed == lines, (file, tip)
        assert start == lines[0], file  # the row sits at its first use


def test_a_run_lists_migrated_lines(project: Path, tmp_path: Path) -> None:
    proc = tool("-i", str(project), "-o", str(tmp_path), "-q", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    _expected(_folded_csv_rows(tmp_path / "proj_msft" / "unsupported_op.csv"), MIGRATED_LINES)


def test_analyse_lists_input_lines(project: Path, tmp_path: Path) -> None:
    proc = tool("--analyse", "-i", str(project), "-o", str(tmp_path), "-q", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    _expected(_folded_csv_rows(tmp_path / "proj_analysis" / "unsupported_op.csv"), INPUT_LINES)


@pytest.mark.parametrize("mode", ["--check", "--diff"])
def test_path_modes_list_input_lines(project: Path, mode: str) -> None:
    files = [str(project / "train.py"), str(project / "explore.ipynb")]
    proc = tool(mode, "--output-format", "json", *files)
    report = json.loads(proc.stdout)
    assert report["line_numbers"] == "input"
    seen = 0
    for entry in report["files"]:
        for item in entry["open_items"]:
            if item["rule"] != "device_strings.not_a_device":
                continue
            seen += 1
            assert item["line"] == INPUT_LINES[0], item
            assert _listed(item["message"]) == INPUT_LINES, item
            assert item["tip"].startswith("lines 8, 9, 13, 14, 26: "), item
    assert seen == 2
