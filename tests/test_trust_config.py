"""Trust, round 2 (issue 42): which pyproject.toml may configure a run (never one above the
project: the first folder upward holding .git, or the input itself), the file used named on the
terminal and in the log, every numeric option and key within its documented bounds, and
``--npu-option`` values checked before anything is written. Each case runs the real command
(``python -m ms_fmk_transplt``) and checks the exit code, the exact stderr and what was written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE = b"import torch\nx = torch.ones(1).cuda()\nlegacy_step()\n"
PLANTED = '{"rules": {"FuncNameModifyRule": [{"old_name": "legacy_step", "new_name": "planted"}]}}'
E = "ms_fmk_transplt: error:"
JOBS = "expected a whole number from 0 to 64 (0: one per core)"
MIB = "expected a number of MiB from 0.001 to 256"
SECONDS = "expected seconds from 0 to 86400 (0: no bound)"


def run(*args: str | bytes, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MS_FMK_TRANSPLT_CACHE": "off"}
    command = [sys.executable, "-m", "ms_fmk_transplt", *args]
    return subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=cwd, timeout=300, errors="replace"
    )


def project(folder: Path) -> Path:
    """folder/proj/train.py (CUDA code calling legacy_step); returns proj."""
    (folder / "proj").mkdir(parents=True)
    (folder / "proj" / "train.py").write_bytes(SOURCE)
    return folder / "proj"


def plant(folder: Path, body: str = 'rule-file = "rules.json"\n') -> Path:
    """A pyproject.toml in ``folder`` whose rule-file renames legacy_step() to planted()."""
    (folder / "rules.json").write_text(PLANTED, encoding="utf-8")
    config = folder / "pyproject.toml"
    config.write_text(f"[tool.ms_fmk_transplt]\n{body}", encoding="utf-8")
    return config


def migrated(out: Path) -> tuple[str, str]:
    """train.py as migrated into out/proj_msft, and the run's log."""
    tree = out / "proj_msft"
    return (
        (tree / "train.py").read_text(encoding="utf-8"),
        (tree / "msFmkTranspltlog.txt").read_text(encoding="utf-8"),
    )


def test_a_pyproject_above_the_project_is_never_read(tmp_path: Path) -> None:
    """Item 1: outer/pyproject.toml above outer/proj is read only once outer holds .git (it is
    then the project root); a shared folder (sticky, world-writable, as /tmp) holding .git and a
    pyproject.toml is never read; paths mode from the repository root reads the root's file."""
    src = project(tmp_path / "outer")
    plant(tmp_path / "outer")
    done = run("-q", "-i", str(src), "-o", "o1", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    code, log = migrated(tmp_path / "o1")
    assert "legacy_step()" in code and "planted" not in code and "configuration" not in log
    done = run("--diff", "proj/train.py", cwd=tmp_path / "outer")
    assert done.returncode == 1 and "planted" not in done.stdout + done.stderr

    (tmp_path / "outer" / ".git").mkdir()  # outer is now the project root: its file counts
    done = run("-q", "-i", str(src), "-o", "o2", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert "\nplanted()\n" in migrated(tmp_path / "o2")[0]
    done = run("--diff", "proj/train.py", cwd=tmp_path / "outer")  # as pre-commit runs it
    assert done.returncode == 1 and "+planted()" in done.stdout

    shared = tmp_path / "shared"
    inner = project(shared)
    (shared / ".git").mkdir()
    plant(shared)
    shared.chmod(0o1777)
    done = run("-q", "-i", str(inner), "-o", "o3", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert "planted" not in migrated(tmp_path / "o3")[0]
    plant(inner)  # the input's own file is read
    done = run("-q", "-i", str(inner), "-o", "o4", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert "\nplanted()\n" in migrated(tmp_path / "o4")[0]


def test_the_file_used_is_named_on_the_terminal_and_in_the_log(tmp_path: Path) -> None:
    """Item 2: one stderr line (not with -q) and one log line name the file; a run without a
    file prints and logs nothing about configuration."""
    src = project(tmp_path)
    config = plant(src)
    named = f"configuration: {config} [tool.ms_fmk_transplt]"
    done = run("-i", str(src), "-o", "o1", "--output-format", "json", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stderr == f"ms_fmk_transplt: {named}\n"
    assert json.loads(done.stdout)  # stdout stays the machine-readable summary
    log = migrated(tmp_path / "o1")[1].splitlines()
    assert [line[20:] for line in log if "configuration" in line] == [f"INFO    {named}"]
    done = run("-q", "-i", str(src), "-o", "o2", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert f"INFO    {named}\n" in migrated(tmp_path / "o2")[1]
    done = run("--check", "train.py", cwd=src)
    assert done.stderr.startswith(f"ms_fmk_transplt: {named}\n")
    done = run("-i", str(src), "-o", "o3", "--isolated", "--output-format", "json", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert "configuration" not in migrated(tmp_path / "o3")[1]


FLAGS = [
    (["-j", "100000"], f"-j/--jobs: {JOBS}, got 100000"),
    (["--jobs", "-1"], f"-j/--jobs: {JOBS}, got -1"),
    (["-j", "2.5"], f"-j/--jobs: {JOBS}, got 2.5"),
    (["--max-file-size", "inf"], f"--max-file-size: {MIB}, got inf"),
    (["--max-file-size", "nan"], f"--max-file-size: {MIB}, got nan"),
    (["--max-file-size", "1e308"], f"--max-file-size: {MIB}, got 1e308"),
    (["--max-file-size", "0"], f"--max-file-size: {MIB}, got 0"),
    (["--max-file-size", "-5"], f"--max-file-size: {MIB}, got -5"),
    (["--max-file-size", "257"], f"--max-file-size: {MIB}, got 257"),
    (["--file-timeout", "inf"], f"--file-timeout: {SECONDS}, got inf"),
    (["--file-timeout", "nan"], f"--file-timeout: {SECONDS}, got nan"),
    (["--file-timeout", "-1"], f"--file-timeout: {SECONDS}, got -1"),
    (["--file-timeout", "1e12"], f"--file-timeout: {SECONDS}, got 1e12"),
    (["--file-timeout", "\x1b[2J"], f"--file-timeout: {SECONDS}, got \\x1b[2J"),
]


@pytest.mark.parametrize("flag, message", FLAGS, ids=[" ".join(f) for f, _ in FLAGS])
def test_a_numeric_option_out_of_bounds_is_one_line(
    tmp_path: Path, flag: list[str], message: str
) -> None:
    """Item 3, the command line: exit 2, one line naming the option, nothing written."""
    src = project(tmp_path)
    done = run("-i", str(src), "-o", "out", *flag, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, f"{E} {message}\n")
    assert not (tmp_path / "out").exists()


KEYS = [
    ("jobs = 100000", f"jobs: {JOBS}, got 100000"),
    ("max-file-size = inf", f"max-file-size: {MIB}, got inf"),
    ("max-file-size = nan", f"max-file-size: {MIB}, got nan"),
    ("max-file-size = 1e308", f"max-file-size: {MIB}, got 1e+308"),
    ("max-file-size = -1", f"max-file-size: {MIB}, got -1"),
    ("max-file-size = 1024", f"max-file-size: {MIB}, got 1024"),  # cannot raise the ceiling
]


@pytest.mark.parametrize("body, message", KEYS, ids=[b for b, _ in KEYS])
def test_a_numeric_key_out_of_bounds_is_one_line(tmp_path: Path, body: str, message: str) -> None:
    """Item 3, the input's own pyproject.toml: exit 2, one line naming file and key."""
    src = project(tmp_path)
    config = plant(src, body + "\n")
    done = run("-i", str(src), "-o", "out", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        f"{E} {config}: [tool.ms_fmk_transplt] {message}\n",
    )
    assert not (tmp_path / "out").exists()


def test_the_bounds_themselves_are_accepted_and_kit_jobs_checked(tmp_path: Path) -> None:
    src = project(tmp_path)
    done = run("-q", "-i", str(src), "-o", "out", "-j", "64", "--max-file-size", "256",
               "--file-timeout", "86400", cwd=tmp_path)  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    assert "\nx = torch.ones(1).npu()\n" in migrated(tmp_path / "out")[0]
    done = run("kit", "aoe", "-i", str(src), "-o", "kits", "-m", "train.py", "-j", "65",
               cwd=tmp_path)  # fmt: skip
    assert (done.returncode, done.stderr) == (2, f"{E} -j/--jobs: {JOBS}, got 65\n")
    assert not (tmp_path / "kits").exists()


OPTIONS = [
    (b"work_path=/data/\xff", "'work_path': the value is not UTF-8 text (got \"/data/\\xff\")"),
    (b"precision_mode=\x1b[31mred", "'precision_mode' must be one of \"force_fp32\","),
]


@pytest.mark.parametrize("value, message", OPTIONS, ids=["not UTF-8", "escape sequence"])
def test_a_bad_npu_option_value_is_one_safe_line(
    tmp_path: Path, value: bytes, message: str
) -> None:
    """Item 4: a value that is not UTF-8 is refused up front (it used to fail every TF file),
    and an enumerated option's error shows the value escaped."""
    src = project(tmp_path)
    tf_code = "import tensorflow as tf\nc = tf.estimator.RunConfig()\n"
    (src / "tf_train.py").write_text(tf_code, encoding="utf-8")
    done = run("-i", str(src), "-o", "out", "--npu-option", value, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(f"{E} --npu-option: {message}") and done.stderr.count("\n") == 1
    assert "\x1b" not in done.stderr
    if value.startswith(b"precision_mode"):
        assert done.stderr.endswith('(got "\\x1b[31mred")\n')
    assert not (tmp_path / "out").exists()


def test_an_input_path_past_path_max_is_one_line(tmp_path: Path) -> None:
    """The configuration is looked for before the input is read: an input whose own absolute
    path the system cannot look at (past PATH_MAX) is the run's one line, not a traceback."""
    here, name = tmp_path, "d" * 200
    fd = os.open(tmp_path, os.O_RDONLY)  # each folder made through its parent's descriptor
    while len(os.fsencode(here)) <= 4200:
        os.mkdir(name, dir_fd=fd)
        child = os.open(name, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd, here = child, here / name
    os.close(fd)
    done = run("-i", str(here), "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.rstrip().endswith("cannot read the input (File name too long)")
    assert not (tmp_path / "out").exists()
