"""Issue 49: the kits' trees and launchers, run. A kit on an already migrated tree does not
carry the previous run's reports; the AOE launcher's rerun that never reaches the loop fails
instead of tuning the stale dump; the profile and precision launchers source CANN's set_env.sh
and pin one card (overridable); compare.sh exits 1 on an `error` row, not on `warning` rows
(msprobe itself replaced by a stand-in that writes the compare CSV)."""

from __future__ import annotations

import csv
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_checked, standin_env
from required_tools import need_module

from ms_fmk_transplt.commands.cli import main as run_main
from ms_fmk_transplt.commands.kit_cli import kit

ROOT = Path(__file__).resolve().parent.parent
PROJECTS = ROOT / "fixtures" / "projects"
OLD_REPORTS = ("change_list.csv", "msFmkTranspltlog.txt", "unsupported_op.csv", "advice.csv")


def _kit(kind: str, project: Path, out: Path, *more: str) -> None:
    args = [kind, "-q", "--no-cache", "-i", str(project), "-o", str(out), "-m", "train.py", *more]
    result = CliRunner().invoke(kit, args)
    assert result.exit_code == 0, result.output


def test_a_kit_on_a_migrated_tree_writes_its_own_reports_only(tmp_path: Path) -> None:
    done = CliRunner().invoke(
        run_main, ["-q", "--no-cache", "-i", str(PROJECTS / "clean_model"), "-o", str(tmp_path)]
    )
    assert done.exit_code == 0, done.output
    migrated = tmp_path / "clean_model_msft"
    assert all((migrated / name).exists() for name in OLD_REPORTS)
    _kit("aoe", migrated, tmp_path / "kit")
    tree = tmp_path / "kit" / "clean_model_msft_aoe"
    roots = sorted(p.name for p in tree.iterdir())
    assert not [name for name in roots if ".msft" in name], roots  # no change_list.msft.csv
    with (tree / "change_list.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and {r["Rule"].split(".")[0] for r in rows} == {"kit"}  # this run's rows
    lines = (tree / "train.py").read_text(encoding="utf-8").splitlines()
    for row in rows:
        assert lines[int(row["Start Line"]) - 1].strip() == row["After"]
    log = (tree / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert "previous run's reports" in log


def _env(tmp_path: Path, **more: str) -> dict[str, str]:
    log = tmp_path / "standin.jsonl"
    env = standin_env(log, PYTHON=sys.executable, PYTHONDONTWRITEBYTECODE="1", **more)
    env.pop("ASCEND_RT_VISIBLE_DEVICES", None)
    return env


def _tools(tmp_path: Path, **scripts: str) -> str:
    tools = tmp_path / "bin"
    tools.mkdir(exist_ok=True)
    for name, text in scripts.items():
        (tools / name).write_text("#!/bin/sh\n" + text)
        (tools / name).chmod(0o755)
    return f"{tools}{os.pathsep}{os.environ['PATH']}"


@pytest.mark.execution
def test_an_aoe_rerun_that_never_reaches_the_loop_tunes_nothing(tmp_path: Path) -> None:
    need_module("torch", "torch is not installed")
    _kit("aoe", PROJECTS / "clean_model", tmp_path)
    tree = tmp_path / "clean_model_msft_aoe"
    path = _tools(tmp_path, aoe='echo tuned >> "$TUNE_BANK_PATH/called"\n')
    proc = run_checked(["bash", str(tree / "run_aoe_npu.sh")], _env(tmp_path, PATH=path))
    assert proc.returncode == 0, proc.stderr
    assert (tree / "aoe_bank" / "called").read_text() == "tuned\n"
    # the script stops before its loop (a bad argument, a missing file): exit 0, no dump
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'no data: nothing to train'\n")
    fake.chmod(0o755)
    for dump in ("", str(tmp_path / "elsewhere")):
        if dump:  # a folder of the user's, with an earlier run's dump: kept, not tuned
            Path(dump).mkdir()
            (Path(dump) / "old.om").write_text("old")
        env = {**_env(tmp_path, PATH=path), "PYTHON": str(fake), "MSFT_AOE_DUMP": dump}
        proc = run_checked(["bash", str(tree / "run_aoe_npu.sh")], env)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "this run dumped nothing into" in proc.stderr and "nothing tuned" in proc.stderr
        assert (tree / "aoe_bank" / "called").read_text() == "tuned\n"  # aoe not run again
    assert (tmp_path / "elsewhere" / "old.om").exists()


@pytest.mark.parametrize(("kind", "launcher"), [("profile", "run_profile_npu.sh"),
                                                ("precision", "run_precision.sh")])  # fmt: skip
def test_profile_and_precision_launchers_source_set_env_and_pin_one_card(
    tmp_path: Path, kind: str, launcher: str
) -> None:
    project = PROJECTS / ("precision_pair" if kind == "precision" else "clean_model")
    _kit(kind, project, tmp_path)
    seen = tmp_path / "env.txt"
    fake = tmp_path / "python"  # records the environment the script gets
    fake.write_text(f'#!/bin/sh\nenv > "{seen}"\n')
    fake.chmod(0o755)
    set_env = tmp_path / "set_env.sh"
    set_env.write_text("export MSFT_CANN_SOURCED=yes\n")
    sides = [(tmp_path / f"{project.name}_msft_{kind}", "ASCEND_RT_VISIBLE_DEVICES")]
    if kind == "precision":
        sides.append((tmp_path / f"{project.name}_gpu_{kind}", "CUDA_VISIBLE_DEVICES"))
    for tree, cards in sides:
        for given, pinned in (("", "0"), ("3,5", "3")):
            env = {**os.environ, "PYTHON": str(fake), "ASCEND_SET_ENV": str(set_env)}
            env.pop("ASCEND_RT_VISIBLE_DEVICES", None)
            env.pop("CUDA_VISIBLE_DEVICES", None)
            if given:
                env[cards] = given
            run_checked(["bash", str(tree / launcher)], env)  # (no trace, no dump: fails after)
            got = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
            assert got.get("MSFT_CANN_SOURCED") == "yes", tree
            assert got.get(cards) == pinned, (tree, cards, given)
            seen.unlink()


HEADER = ["NPU Name", "Bench Name", "Result", "Err_message"]


def _msprobe_writing(tmp_path: Path, results: list[str]) -> str:
    """A PATH whose msprobe writes a compare CSV of one row per result into its -o folder."""
    names = [f"Functional.linear.{i}.forward.output.0" for i in range(len(results))]
    rows = "\\n".join(f"{name},{name},{r}," for name, r in zip(names, results))
    script = (
        'while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done\n'
        f'printf "{",".join(HEADER)}\\n{rows}\\n" > "$out/compare_result_1.csv"\n'
    )
    return _tools(tmp_path, msprobe=script)


def _dump(folder: Path) -> None:
    (folder / "step0" / "proc0").mkdir(parents=True)
    data = '{"data": {"Functional.linear.0.forward": {}, "Functional.linear.1.forward": {}}}'
    (folder / "step0" / "proc0" / "dump.json").write_text(data)


@pytest.mark.parametrize(
    ("results", "code", "verdict"),
    [
        (["pass", "warning"], 0, "no error (read the warning rows)"),
        (["pass", "error"], 1, "DIFFERENT"),
        (["pass", "pass"], 0, "equal"),
    ],
)
def test_compare_exits_1_on_an_error_row_only(
    tmp_path: Path, results: list[str], code: int, verdict: str
) -> None:
    _kit("precision", PROJECTS / "precision_pair", tmp_path)
    npu, gpu = tmp_path / "npu_dump", tmp_path / "gpu_dump"
    _dump(npu)
    _dump(gpu)
    env = {**os.environ, "PATH": _msprobe_writing(tmp_path, results), "PYTHON": sys.executable}
    compare = tmp_path / "precision_pair_msft_precision" / "compare.sh"
    proc = run_checked(["bash", str(compare), str(npu), str(gpu), str(tmp_path / "out")], env)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith(verdict), proc.stdout
    readme = (compare.parent / "KIT_README.md").read_text(encoding="utf-8")
    assert "`warning` rows alone exit 0" in readme
