"""distributed -m on real script shapes, proven by 2-rank runs on the CPU stand-in (pytest -m
execution): a DCGAN-like script (two models initialised with apply() at module level), an
ImageNet-like script that is already distributed (mp.spawn, its own DDP), and an MNIST-like
script whose loaders are configured through **kwargs. Each script is a golden fixture of
fixtures/rules/, migrated here by the CLI and run with the generated run_distributed_npu.sh (or
its own launcher)."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from required_tools import need_module
from test_execution import FINAL, free_port, python_env, run_launch_script

from ms_fmk_transplt.commands.cli import main

need_module("torch", "torch is not installed")

pytestmark = pytest.mark.execution

RULES = Path(__file__).resolve().parent.parent / "fixtures" / "rules"
GAN = RULES / "distributed_mode.ddp" / "gan_two_models.py"
SPAWN = RULES / "distributed_mode.already_distributed" / "spawn_workers.py"
KWARGS = RULES / "distributed_mode.sampler" / "kwargs_literal.py"

# Put first on PYTHONPATH of a run: each process appends the files it writes (torch.save, or
# open() for writing) to $MSFT_WRITES.<RANK> when it exits.
RECORDER = """
import atexit, os, sys

_log, _rank, _seen = os.environ.get("MSFT_WRITES"), os.environ.get("RANK", "?"), []


def _hook(event, args):
    if event == "open" and isinstance(args[0], str) and any(c in (args[1] or "") for c in "wax+"):
        _seen.append(os.path.abspath(args[0]))


if _log:
    import torch

    _save = torch.save

    def _recorded_save(obj, f, *args, **kwargs):
        if isinstance(f, (str, os.PathLike)):
            _seen.append(os.path.abspath(f))
        return _save(obj, f, *args, **kwargs)

    torch.save = _recorded_save
    sys.addaudithook(_hook)

    @atexit.register
    def _dump():
        paths = list(_seen)
        _seen.clear()
        with open(_log + "." + _rank, "a") as fh:
            fh.write("".join(p + "\\n" for p in paths))
"""


def migrate(script: Path, out: Path, *targets: str) -> tuple[Path, str]:
    """The script alone as a project, through `distributed -m`; (output folder, terminal)."""
    project = out / "project"
    project.mkdir(parents=True)
    shutil.copy(script, project / script.name)
    args = ["-i", str(project), "-o", str(out), "distributed", "-m", script.name]
    for target in targets:
        args += ["-t", target]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return out / "project_msft", result.output


def launch(cwd: Path, tmp: Path, *args: str) -> tuple[dict[str, str], dict[str, list[str]]]:
    """run_distributed_npu.sh with 2 ranks: (log of each rank, files each rank wrote)."""
    site = tmp / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(RECORDER)
    env = python_env()
    env.update(
        PYTHONPATH=os.pathsep.join([str(site), env["PYTHONPATH"]]),
        MSFT_WRITES=str(tmp / "writes"),
    )
    by_name = run_launch_script(cwd, env, tmp / "logs", *args, timeout=180)
    logs = {Path(name).stem: text for name, text in by_name.items()}
    writes = {
        f"rank_{rank}": sorted(set((tmp / f"writes.{rank}").read_text().split()))
        if (tmp / f"writes.{rank}").exists()
        else []
        for rank in (0, 1)
    }
    return logs, writes


def weights(trace: Path) -> list[dict[str, list[float]]]:
    """The weights of each rank after the first step, by network."""
    ranks = []
    for path in sorted(trace.glob("weights_*.txt")):
        lines = [line.split() for line in path.read_text().splitlines()]
        ranks.append({line[0]: [float(v) for v in line[1:]] for line in lines})
    assert len(ranks) == 2
    return ranks


def max_difference(ranks: list[dict[str, list[float]]], net: str) -> float:
    first, second = ranks[0][net], ranks[1][net]
    assert len(first) == len(second) > 0
    return max(abs(a - b) for a, b in zip(first, second))


def test_gan_replicas_stay_equal_and_only_rank_0_writes(tmp_path: Path) -> None:
    """Both networks wrapped after apply(weights_init) (each rank draws its own seed): after
    one step the replicas are equal; checkpoints, samples and per-step logs come from rank 0."""
    cwd, _ = migrate(GAN, tmp_path / "out", "netD", "netG")
    trace, outf = tmp_path / "trace", tmp_path / "outf"
    trace.mkdir()
    logs, writes = launch(cwd, tmp_path, "--trace-dir", str(trace), "--outf", str(outf))
    ranks = weights(trace)
    assert max_difference(ranks, "netD") <= 1e-6
    assert max_difference(ranks, "netG") <= 1e-6
    saved = sorted(p.name for p in outf.iterdir())
    assert saved == sorted(
        ["real_samples.pt", "fake_samples_epoch_000.pt", "netG_epoch_0.pth", "netD_epoch_0.pth"]
    )
    in_outf = {
        rank: [Path(p).name for p in paths if Path(p).parent == outf]
        for rank, paths in writes.items()
    }
    assert sorted(set(in_outf["rank_0"])) == saved and in_outf["rank_1"] == []
    assert "Loss_D" in logs["rank_0"] and "Loss_D" not in logs["rank_1"]


def test_gan_model_missing_from_t_is_reported_and_diverges(tmp_path: Path) -> None:
    """The control: with -t netD only, netG is not wrapped -- an open-work row says so, and
    the same 2-rank run measures its replicas apart while netD's stay equal."""
    cwd, terminal = migrate(GAN, tmp_path / "out", "netD")
    with (cwd / "unsupported_op.csv").open(encoding="utf-8", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["Rule"] == "distributed_mode.untargeted_model"]
    # a cell starting with "-" is quoted, as OWASP recommends against formula injection
    assert [r["OP"] for r in rows] == ["'-t netG"] and "1 needs manual work" in terminal
    trace = tmp_path / "trace"
    trace.mkdir()
    launch(cwd, tmp_path, "--trace-dir", str(trace), "--outf", str(tmp_path / "outf"))
    ranks = weights(trace)
    assert max_difference(ranks, "netD") <= 1e-6
    assert max_difference(ranks, "netG") > 1e-3


def test_already_distributed_script_keeps_its_own_setup(tmp_path: Path) -> None:
    """mp.spawn + init_process_group + DDP(device_ids=[args.gpu]): only migrated. Each spawned
    worker binds the NPU of its index and trains one DDP (no DDP around the DDP)."""
    cwd, terminal = migrate(SPAWN, tmp_path / "out")
    text = (cwd / SPAWN.name).read_text()
    assert text.count("DistributedDataParallel(") == SPAWN.read_text().count(
        "DistributedDataParallel("
    )
    assert "msft_" not in text and 'default="hccl"' in text
    assert "torch.npu.set_device(args.gpu)" in text and "model.npu(args.gpu)" in text
    assert "already distributed" in " ".join(terminal.split())
    trace = tmp_path / "trace"
    trace.mkdir()
    env = {**python_env(), "STANDIN_NPU_COUNT": "2"}
    proc = subprocess.run(
        [sys.executable, SPAWN.name, "--multiprocessing-distributed", "--world-size", "1",
         "--rank", "0", "--dist-url", f"tcp://127.0.0.1:{free_port()}", "--trace-dir",
         str(trace)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    workers = [
        dict(item.split("=") for item in p.read_text().split()) for p in trace.glob("worker_*")
    ]
    assert sorted(w["rank"] for w in workers) == ["0", "1"]
    for worker in workers:
        assert worker["gpu"] == worker["device"] == worker["rank"]
        assert (worker["wrapper"], worker["inner"]) == ("DistributedDataParallel", "ConvNet")
    assert workers[0]["params"] == workers[1]["params"]
    assert len(FINAL.findall(proc.stdout)) == 2


def test_kwargs_loader_is_sharded(tmp_path: Path) -> None:
    """DataLoader(dataset1, **train_kwargs), the dict a literal of main() updated with the
    cuda options: each rank reads its own half of the data."""
    cwd, terminal = migrate(KWARGS, tmp_path / "out")
    assert "0 need manual work" in terminal
    trace = tmp_path / "trace"
    trace.mkdir()
    logs, _ = launch(cwd, tmp_path, "--trace-dir", str(trace))
    shards = [set(map(int, p.read_text().split())) for p in trace.glob("samples_*.txt")]
    assert len(shards) == 2 and not shards[0] & shards[1]
    assert shards[0] | shards[1] == set(range(128))
    for text in logs.values():
        first, last = map(float, FINAL.search(text).groups())
        assert last < first
    assert "Train Epoch" in logs["rank_0"] and "Train Epoch" not in logs["rank_1"]
