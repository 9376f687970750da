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
# the edits of -r and distributed -m: CUDA items only where the line they change is CUDA-specific
OPTION_EDITS = {
    "user_rules.ArgsModifyRule",
    "user_rules.FuncNameModifyRule",
    "user_rules.ModuleNameModifyRule",
    *(
        f"distributed_mode.{name}"
        for name in ("init", "sampler", "set_epoch", "ddp", "module_access", "rank_zero_guard")
    ),
}
# README's -r example (the rules of its section "-r/--rule: your own rules")
README_RULES = {
    "rules": {
        "ArgsModifyRule": [
            {"func_name": "torch.optim.SGD", "arg_idx": 1, "arg_name": "lr", "arg_new": "0.05"},
            {"func_name": ".load_state_dict", "arg_name": "strict", "arg_new": "False"},
            {"func_name": "build_model", "arg_name": "use_fused_kernels", "delete": True},
        ],
        "FuncNameModifyRule": [
            {"old_name": "apex.normalization.FusedLayerNorm", "new_name": "torch.nn.LayerNorm"}
        ],
    }
}


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


def _lines(row: dict[str, str]) -> range:
    return range(int(row["Start Line"]), max(int(row["Start Line"]), int(row["End Line"])) + 1)


def _expected(folder: Path) -> dict[str, int]:
    """The numbers, counted from the CSV files alone."""
    changes = _rows(folder / "change_list.csv")
    rows = _rows(folder / "unsupported_op.csv")
    bookkeeping = sum(1 for r in changes if r["Rule"] in BOOKKEEPING)
    caveat_changes = sum(1 for r in changes if "[caveat: " in r["Message"])
    manual = sum(1 for r in rows if r["Action"] == "manual")
    caveat_rows = sum(1 for r in rows if r["Action"] == "caveat")
    skip = BOOKKEEPING | OPTION_EDITS  # the lines of the other changes and of the rows
    cuda = {(r["File"], i) for r in [*rows, *changes] for i in _lines(r) if r["Rule"] not in skip}
    option_edits = sum(
        1
        for r in changes
        if r["Rule"] in OPTION_EDITS
        and (r["Operation Type"] == "INSERT" or not any((r["File"], i) in cuda for i in _lines(r)))
    )
    items = len(changes) - bookkeeping - option_edits + len(rows)
    return {
        "changes": len(changes),
        "bookkeeping": bookkeeping,
        "option_edits": option_edits,
        "caveat_changes": caveat_changes,
        "manual": manual,
        "caveat_rows": caveat_rows,
        "caveat": caveat_changes + caveat_rows,
        "open_work": len(rows),
        "advice": len(_rows(folder / "advice.csv")),
        "items": items,
        "converted": items - manual,
    }


@pytest.mark.parametrize(
    ("project", "extra"),
    [
        ("legacy_gpu", ()),
        ("npu_target", ()),
        ("imagenet", ()),
        ("imagenet", ("-r", "README_RULES")),
        ("imagenet_1p", ("distributed", "-m", "main.py")),
    ],
)
def test_every_output_says_the_same_numbers(
    project: str, extra: tuple[str, ...], tmp_path: Path
) -> None:
    if "README_RULES" in extra:
        rules = tmp_path / "rules.json"
        rules.write_text(json.dumps(README_RULES), encoding="utf-8")
        extra = tuple(str(rules) if a == "README_RULES" else a for a in extra)
    folder, data, terminal = _run(project, tmp_path, *extra)
    n = _expected(folder)
    if extra:  # the option's edits are rows of change_list.csv, not items
        assert n["option_edits"] > 0
        assert (
            data["counts"]["option_edits"] == data["buckets"]["option_edits"] == n["option_edits"]
        )
        table = dict(re.findall(r"│ +(\S[^│]*?) +│ +(\d+) │", terminal))
        assert table["option edits (-r, distributed), not items"] == str(n["option_edits"])
    assert n["items"] >= n["converted"] > 0 and n["bookkeeping"]
    assert extra or (n["items"] > n["converted"] and n["caveat"])  # (imagenet_1p: all converted)
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
    assert converted in head and (caveats in head or not n["caveat"]), head
    manual = f"{n['manual']} {'needs' if n['manual'] == 1 else 'need'} manual work"
    assert manual in head
    assert f"({n['changes']} changes)" in head and f"{n['advice']} advice rows" in head

    # log
    log = (folder / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert f"{converted}: {manual}, {caveats}" in log
    assert f"changes (change_list.csv rows) {n['changes']}," in log

    # workbook Summary
    ws = load_workbook(folder / "unsupported_op.xlsx")["Summary"]
    values = {r[0]: r[1] for r in ws.iter_rows(values_only=True) if r and r[0]}
    assert values["changes (change_list.csv rows)"] == n["changes"]
    assert values["CUDA-specific items (changes - bookkeeping - option edits + rows)"] == n["items"]
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
    assert cards[manual.split(" ", 1)[1]] == str(n["manual"])
    assert cards["advice rows"] == str(n["advice"])
    assert any(
        k.startswith(caveats.split(" ", 1)[1]) and v == str(n["caveat"]) for k, v in cards.items()
    )


def test_an_option_that_edits_no_cuda_code_leaves_the_rate_alone(tmp_path: Path) -> None:
    """README's -r example edits imagenet's optimizer lr and load_state_dict's strict: the same
    items, the same rate as without it. distributed -m on imagenet_1p adds only its edits of
    CUDA-specific lines (``.cuda(0)`` losing its index), not its inserts and its other edits."""
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(README_RULES), encoding="utf-8")
    plain = _run("imagenet", tmp_path / "plain")[1]["buckets"]
    folder, data, _ = _run("imagenet", tmp_path / "rules", "-r", str(rules))
    buckets = data["buckets"]
    assert isinstance(plain, dict) and isinstance(buckets, dict)
    assert any(r["Rule"].startswith("user_rules.") for r in _rows(folder / "change_list.csv"))
    for key in ("items", "converted", "conversion_rate"):
        assert buckets[key] == plain[key], key
    plain = _run("imagenet_1p", tmp_path / "plain_1p")[1]["buckets"]
    folder, data, _ = _run("imagenet_1p", tmp_path / "dist", "distributed", "-m", "main.py")
    buckets = data["buckets"]
    assert isinstance(plain, dict) and isinstance(buckets, dict)
    mode = [r for r in _rows(folder / "change_list.csv") if r["Rule"].startswith("distributed_")]
    on_cuda_lines = [r for r in mode if r["Rule"] == "distributed_mode.device"]
    assert len(mode) > 10 and 0 < len(on_cuda_lines) < 5
    assert buckets["items"] == plain["items"] + len(on_cuda_lines)


def test_distributed_on_a_script_without_cuda_code_finds_no_cuda_items(tmp_path: Path) -> None:
    src = tmp_path / "mnist"
    src.mkdir()
    (src / "main.py").write_text(MNIST, encoding="utf-8")
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", "-i", str(src), "-o", str(tmp_path / "o")]
        + ["distributed", "-m", "main.py"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "100.0% converted (0 of 0 CUDA-specific items)" in done.stdout
    changes = _rows(tmp_path / "o" / "mnist_msft" / "change_list.csv")
    assert sum(1 for r in changes if r["Rule"].startswith("distributed_mode.")) >= 5


MNIST = """import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    model = torch.nn.Linear(4, 2)
    data = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    loader = DataLoader(data, batch_size=8, shuffle=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            print(epoch)
    torch.save(model.state_dict(), "model.pt")


if __name__ == "__main__":
    main()
"""


def test_analyse_says_what_would_happen(tmp_path: Path) -> None:
    """--analyse writes no code: its words are "convertible" and "would change"."""
    _folder, _data, terminal = _run("imagenet", tmp_path, "--analyse")
    head = "\n".join(terminal.splitlines()[-5:])
    assert "% convertible (" in head and "1 Python file: 1 would change (" in head
    assert " converted" not in head and "1 Python files" not in head
