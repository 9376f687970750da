"""``--analyse --library``: the input read as a library, its public APIs that reach CUDA-specific
code listed in library_api.csv and the sheet "Library APIs" of unsupported_op.xlsx."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from openpyxl import load_workbook

from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.engine.library_facts import LibraryFacts, Reach
from ms_fmk_transplt.report.library_api import HEADER, SHEET
from ms_fmk_transplt.report.statistics import public_apis

ROOT = Path(__file__).resolve().parent.parent

INIT = b"from .core import to_gpu, Model\nfrom ._impl import exported\n"
CORE = b"""import torch

from ._helpers import _sync


def to_gpu(x):
    return x.cuda()


def middle(x):
    return to_gpu(x)


def top(x):
    return middle(x)


class Model:
    def __init__(self, size):
        self.size = size

    def step(self):
        self._wait()

    def _wait(self):
        torch.cuda.synchronize()


class Engine:
    def __init__(self, rank):
        torch.cuda.set_device(rank)


def pick_device(x):
    if torch.cuda.is_available():
        return to_gpu(x)
    return x


def uses_helper():
    return _sync()


def clean(x):
    return x + 1
"""
HELPERS = b"import torch\n\n\ndef _sync():\n    torch.cuda.synchronize()\n"
IMPL = b"def exported(x):\n    return x.cuda()\n"

EXPECTED = {  # API -> (Kind, Where)
    "fakelib.core.Engine": ("needs CUDA", "fakelib/core.py:31"),
    "fakelib.core.Model.step": ("needs CUDA", "fakelib/core.py:26"),
    "fakelib.core.middle": ("needs CUDA", "fakelib/core.py:7"),
    "fakelib.core.pick_device": ("CPU path on the NPU", "fakelib/core.py:7"),
    "fakelib.core.to_gpu": ("needs CUDA", "fakelib/core.py:7"),
    "fakelib.core.top": ("needs CUDA", "fakelib/core.py:7"),
    "fakelib.core.uses_helper": ("needs CUDA", "fakelib/_helpers.py:5"),
    "fakelib.exported": ("needs CUDA", "fakelib/_impl.py:2"),
}


def _library(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name, text in (
        ("__init__.py", INIT),
        ("core.py", CORE),
        ("_helpers.py", HELPERS),
        ("_impl.py", IMPL),
    ):
        (folder / name).write_bytes(text)
    return folder


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _analyse(source: Path, out: Path) -> Path:
    args = ["--analyse", "--library", "-i", str(source), "-o", str(out), "--no-cache", "-j", "1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return out / f"{source.name}_analysis"


def test_package_public_apis(tmp_path: Path) -> None:
    folder = _analyse(_library(tmp_path / "fakelib"), tmp_path / "out")
    rows = _rows(folder / "library_api.csv")
    assert [r["API"] for r in rows] == sorted(EXPECTED)  # no _helpers._sync, clean, Model
    assert {r["API"]: (r["Kind"], r["Where"]) for r in rows} == EXPECTED
    paths = {r["API"]: r["Path"] for r in rows}
    assert paths["fakelib.core.top"] == (
        "fakelib.core.top (fakelib/core.py:15) -> fakelib.core.middle (fakelib/core.py:11) -> "
        "fakelib.core.to_gpu (fakelib/core.py:6) -> fakelib/core.py:7: x.cuda()"
    )
    assert "fakelib._helpers._sync (fakelib/_helpers.py:4)" in paths["fakelib.core.uses_helper"]
    assert "fakelib.core.Model._wait" in paths["fakelib.core.Model.step"]
    sheet = load_workbook(folder / "unsupported_op.xlsx")[SHEET]
    cells = [tuple(c.value for c in row) for row in sheet.iter_rows()]
    assert cells[0] == HEADER
    assert cells[-1][:2] == (f"Total: {len(EXPECTED)} APIs", "7 need CUDA")
    assert cells[1:-1] == [tuple(r[h] for h in HEADER) for r in rows]
    log = (folder / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    line = "8 public APIs of fakelib reach CUDA (7 need CUDA, 1 takes the CPU path): "
    assert line + "library_api.csv" in log
    assert (folder / "unsupported_op.csv").is_file()  # the project's reports, as without it


def test_source_tree_packages_not_its_tests(tmp_path: Path) -> None:
    tree = tmp_path / "fakelib-src"
    _library(tree / "src" / "fakelib")
    (tree / "setup.py").write_text("import torch\ntorch.cuda.init()\n")
    (tree / "tests").mkdir()
    (tree / "tests" / "__init__.py").write_bytes(b"")
    (tree / "tests" / "test_core.py").write_bytes(b"def test_gpu(x):\n    return x.cuda()\n")
    (tree / "tool.py").write_bytes(b"def run(x):\n    return x.cuda()\n")
    rows = _rows(_analyse(tree, tmp_path / "out") / "library_api.csv")
    assert [r["API"] for r in rows] == sorted([*EXPECTED, "tool.run"])


def test_clean_library_has_no_rows(tmp_path: Path) -> None:
    lib = tmp_path / "cleanlib"
    lib.mkdir()
    (lib / "__init__.py").write_bytes(b"def f(x):\n    return x + 1\n")
    folder = _analyse(lib, tmp_path / "out")
    assert _rows(folder / "library_api.csv") == []
    log = (folder / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert "0 public APIs of cleanlib reach CUDA (0 need CUDA, 0 take the CPU path)" in log


def test_without_library_no_report(tmp_path: Path) -> None:
    lib = _library(tmp_path / "fakelib")
    args = ["--analyse", "-i", str(lib), "-o", str(tmp_path / "out"), "--no-cache", "-j", "1"]
    assert CliRunner().invoke(main, args).exit_code == 0
    folder = tmp_path / "out" / "fakelib_analysis"
    assert not (folder / "library_api.csv").exists()
    assert SHEET not in load_workbook(folder / "unsupported_op.xlsx").sheetnames


@pytest.mark.parametrize(
    ("extra", "message"),
    [((), "--library requires --analyse"), (("--analyse", "--zoo"), "--library cannot")],
)
def test_refused(tmp_path: Path, extra: tuple[str, ...], message: str) -> None:
    lib = _library(tmp_path / "fakelib")
    cmd = [sys.executable, "-m", "ms_fmk_transplt", "--library", *extra]
    done = subprocess.run(
        [*cmd, "-i", str(lib), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"ms_fmk_transplt: error: {message}")
    assert done.stderr.count("\n") == 1 and done.stdout == ""
    assert not (tmp_path / "out").exists()


def test_public_apis_choice() -> None:
    step = Reach("cuda", ("x (p/m.py:1)", "p/m.py:2: x.cuda()"))
    library = LibraryFacts(
        "p",
        "",
        "",
        {
            "p.m.C": step,
            "p.m.C.__init__": step,
            "p.m.C.__call__": step,
            "p._m.f": step,
            "p._m.D.g": step,
            "p.m._g": step,
            "p.m.C._h": step,
        },
        {"p.f": "p._m.f", "p.D": "p._m.D", "p._x": "p._m.f"},
    )
    assert list(public_apis(library)) == ["p.D.g", "p.f", "p.m.C", "p.m.C.__call__"]


def test_json_summary_and_single_module(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "gpu_tools.py").write_bytes(CORE.replace(b"from ._helpers import _sync\n", b""))
    args = ["--analyse", "--library", "-i", str(folder / "gpu_tools.py"), "-o", str(tmp_path)]
    result = CliRunner().invoke(main, [*args, "--no-cache", "--report-format", "json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["library_apis"] == {"gpu_tools": {"apis": 6, "need_cuda": 5, "cpu_path": 1}}
    rows = _rows(tmp_path / "proj_analysis" / "library_api.csv")
    assert len(rows) == 6 and rows[0]["API"] == "gpu_tools.Engine"
    assert rows[0]["Where"] == "gpu_tools.py:30"  # (31 in core.py, one import line less)
