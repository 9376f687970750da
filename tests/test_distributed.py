"""distributed -m MAIN -t MODEL: the command line, the launcher, and refusals."""

from __future__ import annotations

import csv
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from required_tools import needs_tool

from ms_fmk_transplt.commands.cli import main

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "fixtures" / "projects" / "imagenet_1p"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    code, text = run("-i", str(PROJECT), "-o", str(out), "distributed", "-m", "main.py")
    assert code == 0, text
    return out / "imagenet_1p_msft"


def test_launcher_is_written(migrated: Path) -> None:
    script = migrated / "run_distributed_npu.sh"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert 'main="$here/main.py"' in text and '"$main" "$@"' in text
    assert 'npus="${NPUS:-0,1,2,3,4,5,6,7}"' in text
    for name in (
        "MASTER_ADDR",
        "MASTER_PORT",
        "NNODES",
        "NODE_RANK",
        "RANK_ID",
        "RANK_SIZE",
        "DEVICE_ID",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "ASCEND_RT_VISIBLE_DEVICES",
    ):
        assert name in text


@needs_tool("shellcheck", shutil.which("shellcheck"), "shellcheck not installed")
def test_launcher_passes_shellcheck(migrated: Path) -> None:
    proc = subprocess.run(
        ["shellcheck", str(migrated / "run_distributed_npu.sh")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout


# A stand-in for python: rank 1 fails once rank 0 and rank 2 are up; the others would run for a
# minute, each recording its pid (exec keeps it: the pid the launcher started is the sleep).
FAKE_PYTHON = """#!/usr/bin/env bash
if [ "$RANK" = 1 ]; then
  for _ in $(seq 100); do [ -e "$TRACE/pid_0" ] && [ -e "$TRACE/pid_2" ] && break; sleep 0.1; done
  exit 3
fi
echo "$DEVICE_ID" > "$TRACE/device_$RANK"
echo $$ > "$TRACE/pid_$RANK.tmp" && mv "$TRACE/pid_$RANK.tmp" "$TRACE/pid_$RANK"
exec sleep 600
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie has stopped


def test_launcher_stops_the_other_ranks_when_one_fails(migrated: Path, tmp_path: Path) -> None:
    """run_distributed_npu.sh with 3 ranks, run by bash with a stand-in python: rank 1 exits 3
    while ranks 0 and 2 still run; the launcher stops them and exits 3, without waiting."""
    fake = tmp_path / "python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    trace = tmp_path / "trace"
    trace.mkdir()
    env = {
        **os.environ,
        "NPUS": "0,1,2",
        "PYTHON": str(fake),
        "LOG_DIR": str(tmp_path / "logs"),
        "TRACE": str(trace),
    }
    # the other ranks sleep 600 s: a launcher that waited for them instead of stopping them
    # would run into this timeout (TimeoutExpired fails the test), one that stops them is quick
    proc = subprocess.run(
        ["bash", str(migrated / "run_distributed_npu.sh")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "a rank failed (exit 3): stopping the others" in proc.stderr
    pids = [int((trace / f"pid_{rank}").read_text()) for rank in (0, 2)]
    assert not [pid for pid in pids if alive(pid)], pids
    assert [(trace / f"device_{rank}").read_text() for rank in (0, 2)] == ["0\n", "2\n"]


def test_change_list_records_every_insertion(migrated: Path) -> None:
    with (migrated / "change_list.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    by_rule = {}
    for r in rows:
        by_rule.setdefault(r["Rule"], []).append(r)
    assert [r["Operation Type"] for r in by_rule["distributed_mode.init"]] == ["INSERT", "INSERT"]
    assert len(by_rule["distributed_mode.sampler"]) == 1  # the training loader, not validation
    assert by_rule["distributed_mode.ddp"][0]["Operation Type"] == "INSERT"
    assert (
        by_rule["distributed_mode.set_epoch"][0]["After"] == "train_loader.sampler.set_epoch(epoch)"
    )
    log = (migrated / "msFmkTranspltlog.txt").read_text()
    assert "taken as evaluation" in log


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-m", "missing.py"], "missing.py: distributed -m: no such file (looked in"),
        (["-m", "README.md"], "README.md: distributed -m: not a .py file of the input"),
        (["-m", "../imagenet/main.py"], "distributed -m: the file is outside the input"),
    ],
)
def test_bad_main(tmp_path: Path, args: list[str], message: str) -> None:
    code, text = run("-i", str(PROJECT), "-o", str(tmp_path / "o"), "distributed", *args)
    assert code == 2 and message in text
    assert not (tmp_path / "o").exists()


def test_main_without_dataloader_is_refused(tmp_path: Path) -> None:
    project = ROOT / "fixtures" / "projects" / "streams"
    code, text = run(
        "-i", str(project), "-o", str(tmp_path / "o"), "distributed", "-m", "bench_streams.py"
    )
    assert code == 2
    assert "no torch.utils.data.DataLoader in this file" in text
    assert not (tmp_path / "o").exists()


def test_a_tensorflow_main_is_refused_with_one_line_not_an_internal_error(tmp_path: Path) -> None:
    """The LibCST stage after the span pass lost the lines the TF adapter pass inserts: distributed
    -m on the estimator ended in an internal error (IndexError), not in its own refusal."""
    project = ROOT / "fixtures" / "projects" / "tf_estimator"
    code, text = run(
        "-i", str(project), "-o", str(tmp_path / "o"), "distributed", "-m", "train_estimator.py"
    )
    assert code == 2, text
    assert "no torch.utils.data.DataLoader in this file" in text


def test_target_never_assigned_is_open_work_not_only_a_log_line(tmp_path: Path) -> None:
    code, text = run(
        "-i", str(PROJECT), "-o", str(tmp_path), "distributed", "-m", "main.py", "-t", "net"
    )
    assert code == 0, text
    out = tmp_path / "imagenet_1p_msft"
    main = (out / "main.py").read_text()
    assert "DistributedDataParallel(" not in main
    assert "msft_init_distributed()  # msft: TODO[distributed_mode.unwrapped_model]:" in main
    assert "-t net: never assigned in this file" in (out / "msFmkTranspltlog.txt").read_text()
    rows = (out / "unsupported_op.csv").read_text().splitlines()
    assert any(
        r.endswith(",manual,distributed_mode.unwrapped_model") and ",'-t net," in r for r in rows
    )
    # the terminal's closing lines
    assert "-t net" in text and re.search(r"\d+ needs? manual work", text)
    plain = tmp_path / "plain"
    run("-i", str(PROJECT), "-o", str(plain), "--no-todo-comments", "distributed", "-m",
        "main.py", "-t", "net")  # fmt: skip
    assert "msft: TODO" not in (plain / "imagenet_1p_msft" / "main.py").read_text()


GAN = ROOT / "fixtures" / "rules" / "distributed_mode.ddp" / "gan_two_models.py"


def gan_project(tmp_path: Path) -> Path:
    project = tmp_path / "gan"
    project.mkdir()
    shutil.copy(GAN, project / GAN.name)
    return project


@pytest.mark.parametrize("targets", [["-t", "netD", "-t", "netG"], ["-t", "netD,netG"]])
def test_several_models(tmp_path: Path, targets: list[str]) -> None:
    code, text = run(
        "-i", str(gan_project(tmp_path)), "-o", str(tmp_path / "o"), "distributed", "-m",
        GAN.name, *targets,
    )  # fmt: skip
    assert code == 0, text
    out = (tmp_path / "o" / "gan_msft" / GAN.name).read_text()
    for net in ("netD", "netG"):
        assert f"{net} = torch.nn.parallel.DistributedDataParallel({net}.npu()," in out
    assert "0 need manual work" in text


def test_a_model_trained_but_not_named_is_open_work(tmp_path: Path) -> None:
    code, text = run(
        "-i", str(gan_project(tmp_path)), "-o", str(tmp_path / "o"), "distributed", "-m",
        GAN.name, "-t", "netD",
    )  # fmt: skip
    assert code == 0, text
    out = tmp_path / "o" / "gan_msft"
    main = (out / GAN.name).read_text()
    assert "netG = torch.nn.parallel" not in main
    assert "# msft: TODO[distributed_mode.untargeted_model]: add -t netG" in main
    rows = (out / "unsupported_op.csv").read_text().splitlines()
    assert any(
        ",'-t netG," in r and r.endswith(",manual,distributed_mode.untargeted_model") for r in rows
    )
    assert re.search(r"\d+ needs? manual work", text) and "-t netG" in text


@pytest.mark.parametrize("target", ["net.module", "", "a,,b c"])
def test_bad_target_names_are_refused(tmp_path: Path, target: str) -> None:
    code, text = run(
        "-i", str(PROJECT), "-o", str(tmp_path / "o"), "distributed", "-m", "main.py", "-t", target
    )
    assert code == 2 and "distributed -t:" in text and "is not a variable name" in text
    assert not (tmp_path / "o").exists()


def test_rank_guards_and_their_opt_out(migrated: Path, tmp_path: Path) -> None:
    guarded = (migrated / "main.py").read_text()
    assert "def msft_is_main_process():" in guarded
    assert "    if msft_is_main_process():\n        torch.save(model.module.state_dict()" in guarded
    code, text = run(
        "-i", str(PROJECT), "-o", str(tmp_path), "distributed", "-m", "main.py", "--no-rank-guards"
    )
    assert code == 0, text
    plain = (tmp_path / "imagenet_1p_msft" / "main.py").read_text()
    assert "msft_is_main_process" not in plain
    assert "\n    torch.save(model.module.state_dict()" in plain


def test_already_distributed_script_is_only_migrated(tmp_path: Path) -> None:
    """The torchrun DDP project: no second process group, DDP or set_device rebinding; a
    WARNING on the terminal and a caveat row."""
    project = ROOT / "fixtures" / "projects" / "ddp"
    code, text = run("-i", str(project), "-o", str(tmp_path), "distributed", "-m", "train_ddp.py")
    assert code == 0, text
    out = tmp_path / "ddp_msft"
    main = (out / "train_ddp.py").read_text()
    assert main.count("DDP(") == 1 and "DistributedDataParallel(" not in main
    assert "msft_" not in main and "msft: TODO" not in main
    assert "torch.npu.set_device(local_rank)" in main and 'backend="hccl"' in main
    # the same file as without distributed -m: the normal migration only
    plain = tmp_path / "plain"
    run("-i", str(project), "-o", str(plain))
    assert main == (plain / "ddp_msft" / "train_ddp.py").read_text()
    assert "WARNING" in text and "already distributed" in " ".join(text.split())
    rows = (out / "unsupported_op.csv").read_text().splitlines()
    assert any(r.endswith(",caveat,distributed_mode.already_distributed") for r in rows)
