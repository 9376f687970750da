"""One set of numbers: every output of a run (terminal headline and table, log, workbook Summary,
JSON summary, report.html cards) says the same count for the same thing, and each count is what
the CSV files hold (docs/reports.md, "What the numbers mean"; report/statistics.py)."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from openpyxl import load_workbook

ROOT = Path(__file__).resolve().parent.parent
BOOKKEEPING = {"imports.torch_npu", "todo.comment", "tf.adapter_import"}


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _run(project: str, out: Path, *extra: str) -> tuple[Path, dict[str, object], str]:
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    cmd = [sys.executable, "-m", "ms_fmk_transplt", "-i", str(ROOT / "fixtures/projects" / project)]
    text = subprocess.run(
        [*cmd, "-o", str(out / "text"), *extra], capture_output=True, text=True, env=env
    )
    assert text.returncode == 0, text.stderr
    js = subprocess.run(
        [*cmd, "-o", str(out / "json"), "--report-format", "json", *extra],
        capture_output=True,
        text=True,
        env=env,
    )
    assert js.returncode == 0, js.stderr
    folder = next((out / "text").iterdir())
    return folder, json.loads(js.stdout), text.stdout


def _expected(folder: Path) -> dict[str, int]:
    """The numbers, counted from the CSV files alone."""
    changes = _rows(folder / "change_list.csv")
    rows = _rows(folder / "unsupported_op.csv")
    bookkeeping = sum(1 for r in changes if r["Rule"] in BOOKKEEPING)
    caveat_changes = sum(1 for r in changes if "[caveat: " in r["Message"])
    manual = sum(1 for r in rows if r["Action"] == "manual")
    caveat_rows = sum(1 for r in rows if r["Action"] == "caveat")
    items = len(changes) - bookkeeping + len(rows)
    return {
        "changes": len(changes),
        "bookkeeping": bookkeeping,
        "caveat_changes": caveat_changes,
        "manual": manual,
        "caveat_rows": caveat_rows,
        "caveat": caveat_changes + caveat_rows,
        "open_work": len(rows),
        "advice": len(_rows(folder / "advice.csv")),
        "items": items,
        "converted": items - manual,
    }


@pytest.mark.parametrize("project", ["legacy_gpu", "npu_target", "imagenet"])
def test_every_output_says_the_same_numbers(project: str, tmp_path: Path) -> None:
    folder, data, terminal = _run(project, tmp_path)
    n = _expected(folder)
    assert n["items"] > n["converted"] > 0 and n["caveat"] and n["bookkeeping"]
    rate = f"{n['converted'] / n['items']:.1%}"
    converted = f"{rate} converted ({n['converted']} of {n['items']} CUDA-specific items)"
    caveats = f"{n['caveat']} caveats to check ({n['caveat_changes']} change"

    # JSON
    counts, buckets = data["counts"], data["buckets"]
    assert isinstance(counts, dict) and isinstance(buckets, dict)
    for key in ("changes", "bookkeeping", "manual", "caveat_rows", "open_work", "advice"):
        assert counts[key] == n[key], key
    assert counts["changes_with_caveat"] == n["caveat_changes"]
    for key in ("manual", "caveat", "caveat_rows", "caveat_changes", "items", "converted"):
        assert buckets[key] == n[key], key
    assert all(re.fullmatch(r"[a-z_]+", k) for k in [*counts, *buckets])

    # terminal: the table and the headline
    table = dict(re.findall(r"│ +(\S[^│]*?) +│ +(\d+) │", terminal))
    assert table["changes (change_list.csv rows)"] == str(n["changes"])
    assert table["with a caveat"] == str(n["caveat_changes"])
    assert table["need manual work"] == str(n["manual"])
    assert table["caveat rows"] == str(n["caveat_rows"])
    assert table["advice (advice.csv rows)"] == str(n["advice"])
    head = "\n".join(terminal.splitlines()[-5:])
    assert converted in head and caveats in head, head
    assert f"{n['manual']} need manual work" in head
    assert f"({n['changes']} changes)" in head and f"{n['advice']} advice rows" in head

    # log
    log = (folder / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert f"{converted}: {n['manual']} need manual work, {caveats}" in log
    assert f"changes (change_list.csv rows) {n['changes']}," in log

    # workbook Summary
    ws = load_workbook(folder / "unsupported_op.xlsx")["Summary"]
    values = {r[0]: r[1] for r in ws.iter_rows(values_only=True) if r and r[0]}
    assert values["changes (change_list.csv rows)"] == n["changes"]
    assert values["CUDA-specific items (changes without bookkeeping + rows)"] == n["items"]
    assert values["converted (items - manual)"] == n["converted"]
    assert values["needs manual work (manual rows, sheet Unsupported)"] == n["manual"]
    assert values["caveat rows (sheet Unsupported)"] == n["caveat_rows"]
    assert values["advice rows (sheet Advice, not counted above)"] == n["advice"]
    total = next(r for r in ws.iter_rows(values_only=True) if r and r[0] == "Total")
    assert total[1:4] == (n["open_work"], n["manual"], n["caveat_rows"])

    # report.html cards
    page = (folder / "report.html").read_text(encoding="utf-8")
    cards = dict(
        (label, value)
        for value, label in re.findall(r'class="card[^"]*"><b>([^<]*)</b>([^<]*)</div>', page)
    )
    assert cards[converted.split(" ", 1)[1]] == rate
    assert cards["changes (change_list.csv)"] == str(n["changes"])
    assert cards["need manual work"] == str(n["manual"])
    assert cards["advice rows"] == str(n["advice"])
    assert any(
        k.startswith(caveats.split(" ", 1)[1]) and v == str(n["caveat"]) for k, v in cards.items()
    )


def test_analyse_says_what_would_happen(tmp_path: Path) -> None:
    """--analyse writes no code: its words are "convertible" and "would change"."""
    _folder, _data, terminal = _run("imagenet", tmp_path, "--analyse")
    head = "\n".join(terminal.splitlines()[-5:])
    assert "% convertible (" in head and "1 Python file: 1 would change (" in head
    assert " converted" not in head and "1 Python files" not in head
