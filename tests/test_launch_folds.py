"""A launch setting counts once per run (issue 46, rule unsupported.launch_config): the rows of
the same settings in three or more launch / config files are one row, whose tip counts and names
the files and whose log line lists them all; one or two files keep their rows; a CI service's
configuration gives none. The fold is of the run: a sharded run merged and a warm cache give the
rows of a single cold run (fixtures/projects/launch_configs, its golden in test_projects.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from test_shards import log_lines

from ms_fmk_transplt.engine.rules.unsupported.launch_folds import fold_launch_rows
from ms_fmk_transplt.engine.rules.unsupported.launch_values import ci_config, file_notice
from ms_fmk_transplt.events import Notice
from ms_fmk_transplt.tables import load_tables

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "fixtures" / "projects" / "launch_configs"


def tool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", "-q", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _row(path: str, text: bytes) -> Notice:
    notice = file_notice(path, text, Path(path).suffix, load_tables().unsupported)
    assert notice is not None
    return notice


def test_three_files_fold_two_do_not() -> None:
    files = [[_row(f"r/{n}.yaml", b"x: 1\ndevice: cuda\n")] for n in ("c", "a", "b")]
    files += [[_row(f"d/{n}.yml", b"backend: nccl\n")] for n in ("a", "b")]
    files.append([Notice("t.py", 3, "unsupported.launch_config", files[0][0].severity, "m")])
    folded, lines = fold_launch_rows(files)
    assert [len(rows) for rows in folded] == [0, 1, 0, 1, 1, 1]  # the first by path keeps it
    row = folded[1][0]
    assert (row.file, row.line) == ("r/a.yaml", 2)
    assert row.tip.startswith("3 launch / config files set device: cuda (r/a.yaml:2, ")
    assert lines == [
        "r/a.yaml:2: [unsupported.launch_config] device: cuda: one row for the 3 launch / "
        "config files that set it: r/a.yaml:2, r/b.yaml:2, r/c.yaml:2"
    ]
    assert folded[3] is files[3] and folded[5] is files[5]  # untouched: the same lists


def test_rows_not_showing_all_their_settings_stay() -> None:
    names = (b"NCCL_DEBUG", b"NCCL_IB_DISABLE", b"NCCL_SOCKET_IFNAME", b"NCCL_P2P_LEVEL")
    text = b"".join(b"export %s=1\n" % name for name in (*names, b"NCCL_ALGO", b"NCCL_PROTO"))
    files = [[_row(f"s{n}.sh", text)] for n in range(3)]
    assert files[0][0].api.endswith(" and 2 more")
    assert fold_launch_rows(files) == (files, [])


def test_ci_configuration_is_no_launch_config() -> None:
    for rel in (
        ".github/workflows/test.yml",
        "sub/.circleci/config.yml",
        ".gitlab-ci.yml",
        "azure-pipelines.yml",
        "azure-pipelines-gpu.yaml",
    ):
        assert ci_config(rel), rel
    for rel in ("github/run.yaml", "configs/ci.yaml", "recipes/gitlab-ci.yml", "train.yml"):
        assert not ci_config(rel), rel


def test_shards_merged_and_warm_cache_give_the_single_cold_run(tmp_path: Path) -> None:
    project = tmp_path / "launch_configs"
    shutil.copytree(PROJECT, project)
    single, parts, cache = tmp_path / "single", tmp_path / "parts", tmp_path / "cache"
    assert tool("-i", str(project), "-o", str(single), "--no-cache").returncode == 0
    for i in (1, 2, 3):
        done = tool("-i", str(project), "-o", str(parts), "--no-cache", "--shard", f"{i}/3")
        assert done.returncode == 0, done.stderr
    assert tool("-i", str(project), "-o", str(parts), "--merge-shards", "3").returncode == 0
    for warm in ("cold", "warm"):
        out = tmp_path / warm
        done = tool("-i", str(project), "-o", str(out), "--cache-dir", str(cache))
        assert done.returncode == 0, done.stderr
    name = "launch_configs_msft"
    expected = (single / name / "unsupported_op.csv").read_text(encoding="utf-8")
    assert expected.count("unsupported.launch_config") == 3  # device: cuda once, nccl twice
    for out in (parts, tmp_path / "cold", tmp_path / "warm"):
        assert (out / name / "unsupported_op.csv").read_text(encoding="utf-8") == expected
    log = log_lines(single / name / "msFmkTranspltlog.txt", single)
    assert log == log_lines(parts / name / "msFmkTranspltlog.txt", parts)
    assert sum("one row for the 5 launch / config files" in line for line in log) == 1
