"""Once-per-training-script advice counts once per run: three or more training scripts given
the same launch advice (advice.task_queue, advice.binary_kernels, advice.cpu_affinity) are one
row of advice.csv naming them, the log lists each; one or two scripts keep their own rows."""

from __future__ import annotations

import csv
from pathlib import Path

from helpers import tool

SCRIPT = """import torch


def main():
    model = torch.nn.Linear(2, 2).cuda()
    loss = model(torch.ones(1, 2).cuda()).sum()
    loss.backward()


if __name__ == "__main__":
    main()
"""
SCRIPT_ADVICE = ("advice.task_queue", "advice.binary_kernels", "advice.cpu_affinity")


def _advice(out: Path) -> list[dict[str, str]]:
    with (out / "advice.csv").open(encoding="utf-8") as f:
        return [r for r in csv.DictReader(f) if r["Rule"] in SCRIPT_ADVICE]


def _project(root: Path, scripts: int) -> Path:
    for i in range(scripts):
        folder = root / f"recipe{i}"
        folder.mkdir(parents=True)
        (folder / "train.py").write_text(SCRIPT, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_train.py").write_text(SCRIPT, encoding="utf-8")
    return root


def test_many_scripts_one_row_each_advice(tmp_path: Path) -> None:
    project = _project(tmp_path / "zoo", 5)
    assert tool("-i", str(project), "-o", str(tmp_path / "o"), "--no-cache").returncode == 0
    out = tmp_path / "o" / "zoo_msft"
    rows = _advice(out)
    assert sorted(r["Rule"] for r in rows) == sorted(SCRIPT_ADVICE)  # one row each
    for row in rows:
        assert row["File"] == "recipe0/train.py"
        assert row["API"].startswith('if __name__ == "__main__" of 5 training scripts (')
        # the lines it names are the rows' own (migrated: import torch_npu went in above)
        assert f"(recipe0/train.py:{row['Line']}, " in row["API"]
        assert "recipe2/train.py:11 and 2 more" in row["API"]
    log = (out / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    listed = [line for line in log.splitlines() if "one advice row for the 5 training" in line]
    assert len(listed) == 3
    assert all(f"recipe{i}/train.py:11" in listed[0] for i in range(5))
    assert not any("tests/test_train.py" in line for line in listed)  # a test is no script


def test_two_scripts_keep_their_rows(tmp_path: Path) -> None:
    project = _project(tmp_path / "pair", 2)
    assert tool("-i", str(project), "-o", str(tmp_path / "o"), "--no-cache").returncode == 0
    rows = _advice(tmp_path / "o" / "pair_msft")
    assert len(rows) == 6
    assert {r["File"] for r in rows} == {"recipe0/train.py", "recipe1/train.py"}
    assert all(r["API"] == 'if __name__ == "__main__" (training script)' for r in rows)
