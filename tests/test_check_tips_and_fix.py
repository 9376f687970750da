"""--check prints a finding's tip under it, and --inplace/--fix lists what it could not fix, as
ruff does (its ``= help:`` line; its remaining violations and "Found N errors (M fixed, K
remaining).")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import tool

SOURCE = (
    "import torch\n"
    "\n"
    "x = torch.randn(3).cuda()\n"
    "torch.cuda.nvtx.range_push('step')\n"
    "torch.backends.cudnn.benchmark = True\n"
)
TIP = "  = tip: "


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    return path


def test_check_prints_each_tip_on_one_line_under_its_finding(script: Path) -> None:
    proc = tool("--check", "--fail-on", "caveat", str(script))
    assert proc.returncode == 1
    report = json.loads(tool("--check", "--output-format", "json", str(script)).stdout)
    items = report["files"][0]["changes"] + report["files"][0]["open_items"]
    tips = {f"{script.as_posix()}:{i['line']}:{i['col']}": i["tip"] for i in items}
    lines = proc.stdout.splitlines()
    findings = [line for line in lines if not line.startswith(TIP)]
    assert len(findings) == len(items)  # still one line per finding
    assert not lines[0].startswith(TIP)
    with_tip = 0
    for at, line in enumerate(lines):
        if line.startswith(TIP):
            continue
        tip = tips[line.split(": ", 1)[0]]
        following = lines[at + 1] if at + 1 < len(lines) else ""
        if tip:  # at most one tip line, the tip on one line
            with_tip += 1
            assert following == TIP + " ".join(tip.split())
        else:
            assert not following.startswith(TIP)
    assert with_tip == 2  # the NVTX call (manual) and the cudnn switch (caveat)
    nvtx = next(at for at, line in enumerate(lines) if "device_api.no_npu_counterpart" in line)
    assert lines[nvtx + 1].startswith(TIP + "NVTX ranges do not exist on the NPU")


def test_fix_lists_what_it_left_at_its_lines_in_the_written_file(script: Path) -> None:
    proc = tool("--fix", str(script))
    written = script.read_text().splitlines()
    assert written[1] == "import torch_npu" and written[3] == "x = torch.randn(3).npu()"
    assert proc.returncode == 1, proc.stderr  # as ruff --fix: something is left to do
    lines = proc.stdout.splitlines()
    assert lines[0] == f"migrated {script.as_posix()} (2 changes)"
    left = f"{script.as_posix()}:5:1: device_api.no_npu_counterpart torch.cuda.nvtx.range_push "
    assert lines[1].startswith(left)  # line 4 as given, line 5 once torch_npu is imported
    assert written[4].startswith("torch.cuda.nvtx.range_push")
    assert lines[2].startswith(TIP + "NVTX ranges") and len(lines) == 3  # not the caveat
    assert "Found 3 finding(s) (2 fixed, 1 remaining)." in proc.stderr.splitlines()
    again = tool("--fix", str(script))  # nothing left to fix; the open work stays listed
    assert again.returncode == 1 and again.stdout.splitlines()[0].startswith(left)
    assert "Found 1 finding(s) (0 fixed, 1 remaining)." in again.stderr.splitlines()


def test_fix_follows_fail_on_and_exits_0_when_nothing_is_left(script: Path, tmp_path: Path) -> None:
    caveats = tool("--inplace", "--fail-on", "caveat", str(script))
    assert caveats.returncode == 1
    assert ":6:1: unsupported.backend_switch torch.backends.cudnn.benchmark" in caveats.stdout
    assert "(2 fixed, 2 remaining)." in caveats.stderr
    changes_only = tool("--inplace", "--fail-on", "change", str(script))
    assert changes_only.returncode == 0 and changes_only.stdout == ""
    assert "Found 0 finding(s) (0 fixed, 0 remaining)." in changes_only.stderr
    clean = tmp_path / "clean.py"
    clean.write_text("import torch\n\nx = torch.ones(2).cuda()\n")
    done = tool("--inplace", "-q", str(clean))
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    assert "x = torch.ones(2).npu()" in clean.read_text()


def test_fix_lists_a_file_it_could_not_write_at_its_own_lines(tmp_path: Path) -> None:
    path = tmp_path / "ro.py"
    path.write_text(SOURCE)
    path.chmod(0o444)
    proc = tool("--fix", str(path))
    assert proc.returncode == 1 and path.read_text() == SOURCE
    assert f"{path.as_posix()}:3:5: tensor_methods.cuda_call" in proc.stdout  # not fixed
    assert f"{path.as_posix()}:4:1: device_api.no_npu_counterpart" in proc.stdout
    assert "(0 fixed, 3 remaining)." in proc.stderr  # import, .cuda(), and the NVTX row
