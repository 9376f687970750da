"""What a user reads in the closing lines and the reports: "1 needs manual work" (singular), the
run's time as long as the command took (its start-up and its reports included), and the Ascend
guide the advice cites named as users know it (no internal "seed" numbers)."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from openpyxl import load_workbook

ROOT = Path(__file__).resolve().parent.parent
ONE_MANUAL = "import torch\n\nx = torch.ones(2).cuda()\nm = torch.nn.DataParallel(x)\n"


def tool(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", "--no-cache", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )


def test_one_item_needs_manual_work_everywhere(tmp_path: Path) -> None:
    src = tmp_path / "zoo" / "one"
    src.mkdir(parents=True)
    (src / "train.py").write_text(ONE_MANUAL, encoding="utf-8")
    done = tool("-i", str(src), "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "out" / "one_msft"
    with (folder / "unsupported_op.csv").open(encoding="utf-8", newline="") as fh:
        assert [r["Action"] for r in csv.DictReader(fh)] == ["manual"]
    assert "1 needs manual work ·" in done.stdout and "1 need manual work" not in done.stdout
    log = (folder / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert ": 1 needs manual work, " in log
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert '<div class="card manual"><b>1</b>needs manual work</div>' in page
    # the zoo's totals: one model of one needs work
    zoo = tool("--zoo", "-i", str(tmp_path / "zoo"), "-o", str(tmp_path / "zoo_out"), "-q")
    assert zoo.returncode == 0, zoo.stderr
    sheet = load_workbook(tmp_path / "zoo_out" / "zoo_zoo_summary.xlsx")["Zoo"]
    assert [c.value for c in sheet[sheet.max_row]][10] == "1 of 1 needs work"


def test_the_headline_time_covers_the_reports(tmp_path: Path) -> None:
    """150 files: the reports take a good share of the run (before, the time stopped before
    they were written and started after the start-up: 0.7 s said of a 2.9 s command)."""
    src = tmp_path / "big"
    src.mkdir()
    code = ONE_MANUAL + "s = torch.cuda.Stream()\nopt = torch.optim.Adam([])\n"
    for i in range(150):
        (src / f"m{i}.py").write_text(code, encoding="utf-8")
    launched = time.time()
    done = tool("-i", str(src), "-o", str(tmp_path / "out"), "-j", "1")
    took = time.time() - launched
    assert done.returncode == 0, done.stderr
    said = float(re.findall(r" in (\d+\.\d) s\n", done.stdout)[-1])
    reports = [p for p in (tmp_path / "out" / "big_msft").iterdir() if p.is_file()]
    written = max(p.stat().st_mtime for p in reports) - launched  # the last report, written
    assert written - 0.3 <= said <= took + 0.05, (said, written, took)


def test_the_advice_names_the_guide_as_users_know_it(tmp_path: Path) -> None:
    text = (ROOT / "rules" / "advice.json").read_text(encoding="utf-8")
    assert not re.search(r"\bseed \d{3}\b", text)
    assert "PyTorch model migration and training guide (PyTorch 模型迁移和训练指南" in text
    for entry in json.loads(text)["entries"]:  # every citation of the guide names it so
        documented = entry.get("documented", "")
        assert "porting guide" not in documented, entry["id"]
    src = tmp_path / "p"
    src.mkdir()
    (src / "train.py").write_text(ONE_MANUAL + "opt = torch.optim.Adam([])\n", encoding="utf-8")
    assert tool("-i", str(src), "-o", str(tmp_path / "out")).returncode == 0
    with (tmp_path / "out" / "p_msft" / "advice.csv").open(encoding="utf-8", newline="") as fh:
        cited = [r["Documented in"] for r in csv.DictReader(fh)]
    assert any("PyTorch model migration and training guide" in c for c in cited)
    assert not any(re.search(r"\bseed \d{3}\b", c) for c in cited)
