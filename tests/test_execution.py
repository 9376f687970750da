"""Migrations proven by running them (pytest -m execution).

Each project fixture is migrated by the CLI and run for a few steps with the CPU stand-in for
torch_npu (tests/standin, a test double) on PYTHONPATH: it must exit 0 and its loss must go down.
The un-migrated original must fail on this CPU-only machine, with the same stand-in present.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from required_tools import need_module

from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.engine import migrate_source
from ms_fmk_transplt.tables import load_tables

need_module("torch", "torch is not installed")

pytestmark = pytest.mark.execution

ROOT = Path(__file__).resolve().parent.parent
PROJECTS = ROOT / "fixtures" / "projects"
STANDIN = ROOT / "tests" / "standin"
FINAL = re.compile(r"^FINAL first_loss=([0-9.eE+-]+) last_loss=([0-9.eE+-]+)$", re.M)

# project -> (script, arguments) for a short run
RUNS = {
    "imagenet": ("main.py", ["--dummy", "--epochs", "2"]),
    "amp_loop": ("train_amp.py", []),
    "amp_loop_new_api": ("train_amp.py", ["--new-api"]),
    "ddp": ("train_ddp.py", []),
    "streams": ("bench_streams.py", []),
    "toolkit": ("run.py", []),
    "clean_model": ("train.py", ["--epochs", "3"]),
}


def project_of(run: str) -> str:
    return run.removesuffix("_new_api")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_launch_script(
    cwd: Path, env: dict[str, str], log_dir: Path, *args: str, timeout: int
) -> dict[str, str]:
    """run_distributed_npu.sh in ``cwd`` with 2 ranks (NPUS, PYTHON, LOG_DIR and a free
    MASTER_PORT added to ``env``): the log of each rank by file name; fails with the script's
    output and the logs when the script fails."""
    env = {
        **env,
        "NPUS": "0,1",
        "PYTHON": sys.executable,
        "LOG_DIR": str(log_dir),
        "MASTER_PORT": str(free_port()),
    }
    proc = subprocess.run(
        ["bash", "run_distributed_npu.sh", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    logs = {p.name: p.read_text() for p in log_dir.glob("rank_*.log")}
    assert proc.returncode == 0, proc.stdout + proc.stderr + "\n".join(logs.values())
    return logs


def python_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(STANDIN), env.get("PYTHONPATH")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return env


def execute(cwd: Path, argv: list[str], timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env=python_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def assert_trained(proc: subprocess.CompletedProcess) -> None:
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    match = FINAL.search(proc.stdout)
    assert match, output[-3000:]
    first, last = float(match.group(1)), float(match.group(2))
    assert last < first, f"loss did not decrease: {first} -> {last}"


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("migrated")
    for name in sorted({project_of(r) for r in RUNS}):
        result = CliRunner().invoke(main, ["-q", "-i", str(PROJECTS / name), "-o", str(out)])
        assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("run", sorted(RUNS))
def test_migrated_project_trains(migrated: Path, run: str) -> None:
    script, args = RUNS[run]
    assert_trained(execute(migrated / f"{project_of(run)}_msft", [script, *args]))


@pytest.mark.parametrize("run", sorted(RUNS))
def test_original_fails_without_cuda(tmp_path: Path, run: str) -> None:
    script, args = RUNS[run]
    copy = tmp_path / project_of(run)
    shutil.copytree(PROJECTS / project_of(run), copy)
    proc = execute(copy, [script, *args])
    assert proc.returncode != 0
    assert re.search(r"cuda", proc.stdout + proc.stderr, re.I)


def test_ddp_two_processes_on_hccl(migrated: Path) -> None:
    proc = execute(
        migrated / "ddp_msft",
        ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "train_ddp.py"],
    )
    assert_trained(proc)
    assert "world_size=2" in proc.stdout  # the hccl group was formed by both ranks
    assert "process group ready" in proc.stdout  # dist.get_backend() == "hccl"


def test_imagenet_resume_from_checkpoint(migrated: Path, tmp_path: Path) -> None:
    cwd = migrated / "imagenet_msft"
    ckpt = tmp_path / "ckpt"
    assert_trained(execute(cwd, ["main.py", "--dummy", "--epochs", "1", "--out", str(ckpt)]))
    resumed = execute(
        cwd,
        [
            "main.py",
            "--dummy",
            "--epochs",
            "2",
            "--gpu",
            "0",
            "--resume",
            str(ckpt / "checkpoint.pth.tar"),
        ],
    )
    assert_trained(resumed)
    assert "=> resumed from epoch 1" in resumed.stdout  # map_location and best_acc1.to(...)


def test_disabling_a_rule_breaks_the_run(tmp_path: Path) -> None:
    """The executed tests catch incomplete migrations: without the .cuda() rule the migrated
    script still calls .cuda() and fails on the NPU host."""
    tables = load_tables()
    no_calls = dataclasses.replace(tables.tensor_methods, calls={})
    crippled = dataclasses.replace(tables, tensor_methods=no_calls)
    target = tmp_path / "toolkit"
    shutil.copytree(PROJECTS / "toolkit", target)
    for path in target.rglob("*.py"):
        path.write_bytes(migrate_source(path.read_bytes(), path.name, crippled).output)
    proc = execute(target, ["run.py"])
    assert proc.returncode != 0
    assert "cuda" in (proc.stdout + proc.stderr).lower()


def test_user_rule_into_torch_npu_optim_runs(tmp_path: Path) -> None:
    """A -r rename into torch_npu.optim gets the `import torch_npu` that loads it (it was left a
    TODO with a NameError at run time): the migrated file trains with the fused optimizer."""
    case = ROOT / "fixtures" / "rules" / "user_rules.FuncNameModifyRule" / "to_torch_npu_optim.py"
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(case, src / "train.py")
    rules = ROOT / "rules" / "examples" / "npu_optimizer.json"
    args = ["-q", "-i", str(src), "-o", str(tmp_path), "-r", str(rules)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    out = tmp_path / "src_msft" / "train.py"
    assert out.read_bytes() == case.with_name("to_torch_npu_optim.expected.py").read_bytes()
    proc = execute(out.parent, ["train.py"])
    assert_trained(proc)
    assert "optimizer=NpuFusedAdamW" in proc.stdout


def run_with_env(cwd: Path, argv: list[str], **env: str) -> subprocess.CompletedProcess:
    """``execute`` with ``env`` added, and DEVICE_ID only when ``env`` names it."""
    full = {k: v for k, v in python_env().items() if k != "DEVICE_ID"}
    return subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**full, **env},
    )


def test_specify_device_and_similar_run(tmp_path: Path) -> None:
    """-s pins the script to DEVICE_ID through MSFT_NPU_DEVICE: amp_loop's hard-coded "cuda:0"
    becomes the NPU DEVICE_ID names (3 here, 0 without it) and the run still trains; with -sim
    the streams benchmark loses its NVTX calls and trains too."""
    for name, extra in (("amp_loop", ["-s"]), ("streams", ["-s", "-sim"])):
        args = ["-q", "-i", str(PROJECTS / name), "-o", str(tmp_path), *extra]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
    amp = tmp_path / "amp_loop_msft"
    assert 'os.environ.get("DEVICE_ID", "0")' in (amp / "train_amp.py").read_text()
    for device_id in ("3", None):
        env = {"STANDIN_NPU_COUNT": "4"} | ({"DEVICE_ID": device_id} if device_id else {})
        proc = run_with_env(amp, ["train_amp.py"], **env)
        assert_trained(proc)
        assert f"Using cuda: npu:{device_id or 0}\n" in proc.stdout, proc.stdout[-2000:]
    cwd = tmp_path / "streams_msft"
    assert "torch.cuda.nvtx" not in (cwd / "bench_streams.py").read_text()
    assert_trained(run_with_env(cwd, ["bench_streams.py", "--nvtx"], DEVICE_ID="0"))


def test_flash_attention_replacement_is_numerically_equal() -> None:
    """The -sim rewrite of flash_attn_func (with its layout transposes) computes the same
    attention as a reference written in flash_attn's (batch, seq, heads, dim) layout."""
    import torch

    from ms_fmk_transplt.engine import EngineOptions

    code = (
        "import torch\nfrom flash_attn import flash_attn_func\n\n"
        "def attend(q, k, v):\n    return flash_attn_func(q, k, v, 0.0, None, True)\n"
    )
    migrated = migrate_source(code.encode(), "a.py", load_tables(), EngineOptions(similar=True))
    text = migrated.output.decode().replace("import torch_npu\n", "")
    assert "flash_attn" not in text.split("#")[0]
    namespace: dict = {}
    exec(compile(text, "a.py", "exec"), namespace)  # noqa: S102 - our own migrated snippet
    torch.manual_seed(0)
    b, s, h, d = 2, 5, 3, 4
    q, k, v = (torch.randn(b, s, h, d) for _ in range(3))
    scores = torch.einsum("bshd,bthd->bhst", q, k) / d**0.5
    scores = scores.masked_fill(torch.ones(s, s).triu(1).bool(), float("-inf"))
    reference = torch.einsum("bhst,bthd->bshd", scores.softmax(-1), v)
    assert torch.allclose(namespace["attend"](q, k, v), reference, atol=1e-5)


def migrate_distributed(out: Path) -> None:
    """The single-card ImageNet-style fixture through `distributed -m main.py`."""
    args = [
        "-q",
        "-i",
        str(PROJECTS / "imagenet_1p"),
        "-o",
        str(out),
        "distributed",
        "-m",
        "main.py",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output


def test_distributed_launcher_two_ranks(tmp_path: Path) -> None:
    """The migrated single-card ImageNet-style script, launched by the generated
    run_distributed_npu.sh with 2 processes (hccl = gloo on the stand-in): both ranks train,
    read disjoint halves of the data, and end with identical parameters."""
    migrate_distributed(tmp_path)
    cwd = tmp_path / "imagenet_1p_msft"
    trace = tmp_path / "trace"
    trace.mkdir()
    logs = run_launch_script(
        cwd, python_env(), tmp_path / "logs", "--trace-dir", str(trace), timeout=120
    )
    assert sorted(logs) == ["rank_0.log", "rank_1.log"]
    for text in logs.values():
        first, last = map(float, FINAL.search(text).groups())
        assert last < first
    shards = [set(map(int, p.read_text().split())) for p in trace.glob("samples_*.txt")]
    assert len(shards) == 2 and not shards[0] & shards[1]
    assert shards[0] | shards[1] == set(range(128))
    params = [float(p.read_text()) for p in trace.glob("params_*.txt")]
    assert len(params) == 2 and params[0] == pytest.approx(params[1], rel=1e-12, abs=1e-12)


def test_distributed_launcher_stops_all_ranks_when_one_fails(tmp_path: Path) -> None:
    migrate_distributed(tmp_path)
    cwd = tmp_path / "imagenet_1p_msft"
    env = {
        **python_env(),
        "NPUS": "0,1",
        "PYTHON": sys.executable,
        "LOG_DIR": str(tmp_path / "logs"),
    }
    proc = subprocess.run(
        ["bash", "run_distributed_npu.sh", "--epochs", "not-a-number"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2  # argparse's exit code, from the first failing rank
    assert "a rank failed (exit 2)" in proc.stderr
