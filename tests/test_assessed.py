"""``--assessed`` (issue 48): what ``kit assess`` recorded folds into a later migration's
unsupported_op rows. End to end on CPU torch: kit assess on a small project, its launcher run,
then the migration with ``--assessed``, unsupported_op.csv read back; and the bad ops.csv
files each refused in one line (exit 2, nothing written), the rows that cannot be placed said
in the log."""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_checked
from required_tools import needs_tool

from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.commands.kit_cli import kit

TORCH = needs_tool("torch", importlib.util.find_spec("torch"), "torch is not installed")
LIBRARY = """import torch.nn.functional as F


def pool(x):
    return F.adaptive_max_pool2d(x, 1)
"""
TRAIN = """import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "site-packages"))
import torch
import torch.nn.functional as F
import poolib


def main():
    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(20):
        batch = torch.ones(step + 1, 4)  # GROWING
        out = model(batch)
        noise = torch.arange(8.0) - step
        kept = noise[noise > 2]  # MASK
        up = F.interpolate(out[None], scale_factor=2)  # INTERPOLATE
        pooled = F.max_pool2d(torch.ones(1, 1, 4, 4, dtype=torch.float64), 2)  # FLOAT64
        deep = poolib.pool(torch.ones(1, 2, 4, 4))  # LIBRARY
        loss = out.mean() + up.mean() + kept.sum() + pooled.sum().float() + deep.sum()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def _line(marker: str) -> int:
    return next(i for i, text in enumerate(TRAIN.splitlines(), 1) if marker in text)


def _project(root: Path) -> Path:
    project = root / "proj"
    (project / "site-packages" / "poolib").mkdir(parents=True)
    (project / "site-packages" / "poolib" / "__init__.py").write_text(LIBRARY, encoding="utf-8")
    (project / "train.py").write_text(TRAIN, encoding="utf-8")
    return project


def _rows(tree: Path) -> list[dict[str, str]]:
    with (tree / "unsupported_op.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def assessed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The project, and the assess folder a real recording of 3 steps wrote."""
    root = tmp_path_factory.mktemp("assessed")
    project = _project(root)
    return project, _recorded(project, root / "kit", "train.py", 3, root)


def _recorded(project: Path, out: Path, main_rel: str, steps: int, cwd: Path) -> Path:
    """kit assess of ``project`` into ``out``, its launcher run from ``cwd``: the assess folder."""
    args = ["assess", "-q", "--no-cache", "-i", str(project), "-o", str(out), "-m", main_rel]
    result = CliRunner().invoke(kit, [*args, "--steps", str(steps)])
    assert result.exit_code == 0, result.output
    tree = out / f"{project.name}_msft_assess"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MSFT_")}
    env.update(PYTHON=sys.executable, CUDA_VISIBLE_DEVICES="")
    run = run_checked(["bash", str(tree / "run_assess.sh")], env, cwd=cwd)
    assert run.returncode == 0, run.stderr
    return tree / "assess"


@TORCH
def test_the_recording_becomes_rows_at_the_input_lines(
    assessed: tuple[Path, Path], tmp_path: Path
) -> None:
    project, folder = assessed
    before = _digest(project)
    out = tmp_path / "out"
    args = ["-q", "--no-cache", "-i", str(project), "-o", str(out), "--assessed", str(folder)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    rows = _rows(out / "proj_msft")
    found = {(r["Rule"], r["OP"], int(r["Start Line"])) for r in rows if r["File"] == "train.py"}
    # the kit's three lines above the loop are taken off: the input's numbering
    assert (
        "assess.unsupported",
        "torch.nn.functional.adaptive_max_pool2d",
        _line("LIBRARY"),
    ) in found
    assert ("assess.restricted", "torch.nn.functional.max_pool2d", _line("FLOAT64")) in found
    dynamic = {line for rule, _, line in found if rule == "assess.dynamic_shape"}
    assert {_line("GROWING"), _line("MASK")} <= dynamic
    library = next(r for r in rows if r["Rule"] == "assess.unsupported")
    assert "kit assess: called 3 times through poolib" in library["Tips"]
    # the span pass's own row of interpolate(scale_factor=...) gains what the run saw
    interpolate = [r for r in rows if r["OP"] == "torch.nn.functional.interpolate"]
    assert [r["Rule"] for r in interpolate if r["Category"] != "dynamic_shape"] == [
        "operator_support.restricted"
    ]
    log = (out / "proj_msft" / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    seen = f"kit assess saw it run at line {_line('INTERPOLATE')}: hit by scale_factor; called 3"
    assert seen in log  # (what the restriction was hit by is kept)
    assert _digest(project) == before  # the input is never changed


@TORCH
def test_without_the_option_no_assess_row(assessed: tuple[Path, Path], tmp_path: Path) -> None:
    project, _ = assessed
    result = CliRunner().invoke(main, ["-q", "--no-cache", "-i", str(project), "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert not [r for r in _rows(tmp_path / "proj_msft") if r["Rule"].startswith("assess.")]


HEADER = "API,Calls,Dtypes,Arguments,Shapes,Dynamic,NPU,Where\n"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "--assessed: no ops.csv there (give kit assess's assess/ folder)"),
        (b"\xff\xfe\x00garbage", "--assessed: not kit assess's ops.csv"),
        (b"a,b,c\n1,2,3\n", "--assessed: not kit assess's ops.csv (no API column)"),
        ((HEADER + "torch.sum,many,,,,no,supported,train.py:3\n").encode(), "line 2 is not"),
        ((HEADER + "os.system('x'),1,,,,no,supported,train.py:3\n").encode(), "line 2 is not"),
        ((HEADER + "torch.sum,1,,,[(1,)],no,supported,train.py:3\n").encode(), "line 2 is not"),
        ((HEADER + "torch.sum,\u00b2,,,,no,supported,train.py:3\n").encode(), "line 2 is not"),
        ((HEADER + "torch.sum," + "9" * 5000 + ",,,,no,supported,train.py:3\n").encode(), "line 2"),
    ],
)
def test_a_bad_ops_csv_is_one_line_and_exit_2(
    content: bytes | None, problem: str, tmp_path: Path
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    given = tmp_path / "given" / "ops.csv"
    if content is not None:
        given.parent.mkdir()
        given.write_bytes(content)
    out = tmp_path / "out"
    args = ["-i", str(project), "-o", str(out), "--assessed", str(given)]
    result = run_checked([sys.executable, "-m", "ms_fmk_transplt", *args], dict(os.environ))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and problem in lines[0] and "ops.csv" in lines[0], lines
    assert not out.exists()


def test_a_row_that_names_no_project_file_is_not_placed(tmp_path: Path) -> None:
    """A library-only Where, a path out of the project, an absolute one, a file renamed
    since: said in the log, no row, nothing read or written outside the output."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.ones(2)\n")
    where = ["(timm)", "../outside.py:1", "/etc/passwd:1", "gone.py:3", "train.py:2"]
    rows = "".join(
        f'torch.nn.functional.adaptive_max_pool2d,1,float32,,"[(1,)]",no,unsupported,{w}\n'
        for w in where
    )
    given = tmp_path / "ops.csv"
    given.write_text(HEADER + rows, encoding="utf-8")
    (tmp_path / "outside.py").write_text("x = 1\n")
    out = tmp_path / "out"
    args = ["-q", "--no-cache", "-i", str(project), "-o", str(out), "--assessed", str(given)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    placed = [r for r in _rows(out / "proj_msft") if r["Rule"] == "assess.unsupported"]
    assert [(r["File"], r["Start Line"]) for r in placed] == [("train.py", "2")]
    log = (out / "proj_msft" / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert "1 of 5 APIs at project lines" in log
    for w in where[:4]:
        assert f"adaptive_max_pool2d ({w}) is not placed" in log


NET = """import torch


def forward(x):
    return torch.nn.functional.adaptive_max_pool2d(x, 1)  # POOL
"""
SCRIPT = """import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
from models.net import forward

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    out = forward(model(torch.ones(1, 2, 4, 4)))
    out.sum().backward()
    optimizer.step()
"""


@TORCH
def test_a_main_script_in_a_sub_folder_names_the_project_s_files(tmp_path: Path) -> None:
    """-m scripts/train.py: the launcher runs it from scripts/, yet Where names
    models/net.py (the project's file, not a library "models"), and the fold places it."""
    project = tmp_path / "proj"
    (project / "models").mkdir(parents=True)
    (project / "scripts").mkdir()
    (project / "models" / "__init__.py").write_text("")
    (project / "models" / "net.py").write_text(NET)
    (project / "scripts" / "train.py").write_text(SCRIPT)
    folder = _recorded(project, tmp_path / "kit", "scripts/train.py", 2, tmp_path)
    with (folder / "ops.csv").open(encoding="utf-8", newline="") as fh:
        rows = {r["API"]: r for r in csv.DictReader(fh)}
    pool = "torch.nn.functional.adaptive_max_pool2d"
    line = next(i for i, t in enumerate(NET.splitlines(), 1) if "POOL" in t)
    assert rows[pool]["Where"] == f"models/net.py:{line}"
    assert rows["torch.nn.functional.linear"]["Where"] == "scripts/train.py:11"
    out = tmp_path / "out"
    args = ["-q", "--no-cache", "-i", str(project), "-o", str(out)]
    done = CliRunner().invoke(main, [*args, "--assessed", str(folder)])
    assert done.exit_code == 0, done.output
    placed = [(r["File"], r["Start Line"]) for r in _rows(out / "proj_msft") if r["OP"] == pool]
    assert placed == [("models/net.py", str(line))]


def test_a_stale_line_and_a_control_character_are_said_not_shown(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.ones(2)\n")
    given = tmp_path / "ops.csv"
    rows = (
        'torch.nn.functional.adaptive_max_pool2d,1,float32,,"[(1,)]",no,unsupported,train.py:999\n'
        'torch.nn.functional.adaptive_max_pool2d,1,float32,,"[(1,)]\x00\x1b[31m",yes,unsupported,'
        "train.py:2\n"
    )
    given.write_text(HEADER + rows, encoding="utf-8")
    out = tmp_path / "out"
    args = ["-q", "--no-cache", "-i", str(project), "-o", str(out), "--assessed", str(given)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    log = (out / "proj_msft" / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert (
        "(train.py:999) is not placed (train.py has 2 lines: changed since the assessment?)" in log
    )
    texts = [p for p in (out / "proj_msft").iterdir() if p.is_file() and p.suffix != ".xlsx"]
    written = b"".join(p.read_bytes() for p in texts)
    assert b"[(1,)][31m" in written  # the cell, its control characters dropped
    assert b"\x00" not in written and b"\x1b" not in written
