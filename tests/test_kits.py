"""``ms_fmk_transplt kit aoe|profile|precision`` (issue 33), read back from what it writes and
run: the kit's rows in change_list.csv point at the calls in the tree's script, KIT_README.md
lists them, the launchers pass shellcheck, the input is untouched, a script without one training
loop is refused with one line. The executed tests run each launcher on the CPU under the
torch_npu stand-in (tests/standin), whose profiler and set_aoe record their calls
(MSFT_STANDIN_LOG); the precision kit's two sides are dumped by msprobe and compared."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_checked, standin_calls, standin_env
from required_tools import need_module, needs_tool

from ms_fmk_transplt.commands.kit_cli import kit
from ms_fmk_transplt.kits.msft_compare import read_comparison

ROOT = Path(__file__).resolve().parent.parent
PROJECTS = ROOT / "fixtures" / "projects"
KIT_RULES = {
    "aoe": ["kit.import", "kit.aoe_dump", "kit.aoe_stop"],
    "profile": ["kit.import", "kit.profile_start", "kit.profile_step"],
    "precision": ["kit.import", "kit.precision_seed", "kit.precision_start", "kit.precision_step"],
    "overflow": ["kit.import", "kit.overflow_start", "kit.overflow_step"],
}


def run_kit(kind: str, project: Path, out: Path, main: str, *more: str) -> Path:
    result = CliRunner().invoke(
        kit, [kind, "-q", "--no-cache", "-i", str(project), "-o", str(out), "-m", main, *more]
    )
    assert result.exit_code == 0, result.output
    return out / f"{project.name}_msft_{kind}"


def tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()


def kit_rows(tree: Path) -> list[dict[str, str]]:
    with (tree / "change_list.csv").open(encoding="utf-8", newline="") as fh:
        return [row for row in csv.DictReader(fh) if row["Rule"].startswith("kit.")]


@pytest.mark.parametrize("kind", sorted(KIT_RULES))
def test_each_row_points_at_its_call_and_the_readme_lists_it(tmp_path: Path, kind: str) -> None:
    before = tree_digest(PROJECTS / "clean_model")
    tree = run_kit(kind, PROJECTS / "clean_model", tmp_path, "train.py")
    assert tree_digest(PROJECTS / "clean_model") == before  # the input is only read
    rows = kit_rows(tree)
    assert [r["Rule"] for r in rows] == KIT_RULES[kind]
    lines = (tree / "train.py").read_text(encoding="utf-8").splitlines()
    readme = (tree / "KIT_README.md").read_text(encoding="utf-8")
    for row in rows:
        assert lines[int(row["Start Line"]) - 1].strip() == row["After"]
        assert f"| `train.py:{row['Start Line']}` | `{row['Rule']}` | `{row['After']}` |" in readme
    # the begin call right above the training loop, the tick first in its body
    begin = next(i for i, line in enumerate(lines) if line.strip().endswith("_begin()"))
    assert lines[begin + 1].strip() == "for inputs, targets in loader:"
    assert lines[begin + 2].strip() == f"msft_kit.{kind}_tick()"
    assert (tree / "msft_kit.py").read_bytes() == (
        ROOT / "ms_fmk_transplt" / "kits" / "msft_kit.py"
    ).read_bytes()
    compile((tree / "train.py").read_text(encoding="utf-8"), "train.py", "exec")


def test_the_kits_rows_are_not_counted_as_cuda_items(tmp_path: Path) -> None:
    tree = run_kit("aoe", PROJECTS / "clean_model", tmp_path, "train.py")
    log = (tree / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert "(5 of 5 CUDA-specific items)" not in log
    assert "(2 of 2 CUDA-specific items)" in log


@needs_tool("shellcheck", shutil.which("shellcheck"), "shellcheck not installed")
@pytest.mark.parametrize(
    ("kind", "project", "main"),
    [
        ("aoe", "clean_model", "train.py"),
        ("profile", "clean_model", "train.py"),
        ("precision", "precision_pair", "train.py"),
        ("overflow", "clean_model", "train.py"),
        ("aoe", "tf_estimator", "train_estimator.py"),
        ("profile", "tf_session", "train_session.py"),
    ],
)
def test_launchers_pass_shellcheck(tmp_path: Path, kind: str, project: str, main: str) -> None:
    tree = run_kit(kind, PROJECTS / project, tmp_path, main)
    scripts = sorted(tmp_path.rglob("*.sh"))
    assert scripts and all(os.access(s, os.X_OK) for s in scripts)
    proc = subprocess.run(["shellcheck", *map(str, scripts)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    assert (tree / "KIT_README.md").exists()


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return run_checked([sys.executable, "-m", "ms_fmk_transplt", *args], env, cwd=cwd)


@pytest.mark.parametrize(
    ("kind", "source", "why"),
    [
        (
            "aoe",
            "import lightning as L\nL.Trainer().fit(model)\n",
            "kit aoe -m: no training loop found in train.py: no optimizer step",
        ),
        (
            "profile",
            "for x in data: opt.zero_grad(); model(x).sum().backward(); opt.step()\n",
            "kit profile -m: the training loop's body is on the loop's line",
        ),
        (
            "precision",
            "import tensorflow as tf\nfor x in data:\n    optimizer.step()\n",
            "kit precision -m: a TensorFlow script: the precision kit dumps PyTorch steps",
        ),
        (
            "precision",
            "import torch\nimport torch_npu\nfor x in data:\n    optimizer.step()\n",
            "kit precision -m: the script imports torch_npu: the precision kit's GPU side",
        ),
    ],
    ids=["trainer_fit", "one_line_body", "tensorflow_precision", "migrated_precision"],
)
def test_refused_with_one_line_and_nothing_written(
    tmp_path: Path, kind: str, source: str, why: str
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text(source, encoding="utf-8")
    out = tmp_path / "out"
    proc = _cli("kit", kind, "-i", str(project), "-o", str(out), "-m", "train.py", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("ms_fmk_transplt: error: train.py: " + why), proc.stderr
    assert proc.stderr.rstrip().endswith("nothing written")
    assert not out.exists() or not any(out.iterdir())


def test_a_kits_own_tree_is_refused(tmp_path: Path) -> None:
    tree = run_kit("aoe", PROJECTS / "clean_model", tmp_path / "first", "train.py")
    proc = _cli(
        "kit",
        "profile",
        "-i",
        str(tree),
        "-o",
        str(tmp_path / "again"),
        "-m",
        "train.py",
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert "the script calls msft_kit already" in proc.stderr


def _standin_env(log: Path, **more: str) -> dict[str, str]:
    return standin_env(
        log, PYTHON=sys.executable, PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg", **more
    )


def _bash(script: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_checked(["bash", str(script), *args], env)


@pytest.mark.execution
def test_aoe_launcher_dumps_one_step_then_tunes(tmp_path: Path) -> None:
    need_module("torch", "torch is not installed")
    tree = run_kit("aoe", PROJECTS / "clean_model", tmp_path, "train.py")
    tools = tmp_path / "bin"
    tools.mkdir()
    aoe = tools / "aoe"  # AOE itself needs an NPU: this one says how it was called
    aoe.write_text('#!/bin/sh\necho "$* $TUNE_BANK_PATH" > "$TUNE_BANK_PATH/called"\n')
    aoe.chmod(0o755)
    set_env = tmp_path / "set_env.sh"  # as CANN's: extends variables that may be unset
    set_env.write_text("export LD_LIBRARY_PATH=/opt/cann/lib64:$LD_LIBRARY_PATH\n")
    log = tmp_path / "standin.jsonl"
    env = _standin_env(
        log, PATH=f"{tools}{os.pathsep}{os.environ['PATH']}", ASCEND_SET_ENV=str(set_env)
    )
    env.pop("LD_LIBRARY_PATH", None)
    proc = _bash(tree / "run_aoe_npu.sh", env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    dump = tree / "aoe_dump"
    assert [e["event"] for e in standin_calls(log)].count("npu.set_aoe") == 1
    assert next(e for e in standin_calls(log) if e["event"] == "npu.set_aoe")["dump_path"] == str(
        dump
    )
    assert any(dump.iterdir())
    assert "msft_kit: aoe: step 0 dumped" in proc.stderr
    assert "FINAL" not in proc.stdout  # stopped at the second step, never finished training
    called = (tree / "aoe_bank" / "called").read_text().split()
    assert called == ["--job_type=2", f"--model_path={dump}", str(tree / "aoe_bank")]


@pytest.mark.execution
def test_profile_launcher_leaves_the_trace_of_the_active_steps(tmp_path: Path) -> None:
    need_module("torch", "torch is not installed")
    tree = run_kit("profile", PROJECTS / "clean_model", tmp_path, "train.py")
    log = tmp_path / "standin.jsonl"
    old = tree / "profile" / "worker_1_ascend_pt"  # an earlier run's: not this run's trace
    old.mkdir(parents=True)
    os.utime(old, (1e9, 1e9))
    env = _standin_env(log, MSFT_PROF_SKIP_FIRST="2", MSFT_PROF_ACTIVE="3")
    proc = _bash(tree / "run_profile_npu.sh", env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    traces = sorted((tree / "profile").glob("*_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json"))
    assert len(traces) == 1, proc.stdout
    assert str(old) not in proc.stdout
    trace = json.loads(traces[0].read_text(encoding="utf-8"))
    assert trace["steps"] == [4, 5, 6]  # after 2 skipped, 1 waiting, 1 warm-up step
    assert "FINAL" not in proc.stdout
    assert f"trace: {traces[0].parent.parent}" in proc.stdout


@pytest.mark.execution
def test_tensorflow_aoe_launcher_sets_the_adapters_environment(tmp_path: Path) -> None:
    tree = run_kit("aoe", PROJECTS / "tf_estimator", tmp_path, "train_estimator.py")
    assert not kit_rows(tree) and not (tree / "msft_kit.py").exists()
    assert "AOE_MODE=2" in (tree / "KIT_README.md").read_text(encoding="utf-8")
    seen = tmp_path / "env.txt"
    fake = tmp_path / "python"  # records the environment the script gets
    fake.write_text(f'#!/bin/sh\nenv > "{seen}"\necho "ran $1"\n')
    fake.chmod(0o755)
    env = {**os.environ, "PYTHON": str(fake), "HOME": str(tmp_path)}
    proc = _bash(tree / "run_aoe_npu.sh", env)
    assert proc.returncode == 0, proc.stderr
    got = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    assert got["AOE_MODE"] == "2"
    assert got["ASCEND_WORK_PATH"] == str(tree / "aoe_work")
    assert got["TUNE_BANK_PATH"] == str(tree / "aoe_bank")
    assert "no aoe_result_*.json" in proc.stderr
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "npu-smi").write_text("#!/bin/sh\necho '| 0     910B3   | OK |'\n")
    (tools / "npu-smi").chmod(0o755)
    env.update(AOE_MODE="1", PATH=f"{tools}{os.pathsep}{os.environ['PATH']}")
    proc = _bash(tree / "run_aoe_npu.sh", env)
    assert proc.returncode == 2
    assert "subgraph tuning (AOE_MODE=1) does not exist on Atlas A2/A3" in proc.stderr


def _msprobe() -> str | None:
    """msprobe's command installed with this interpreter, else on PATH."""
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    return shutil.which("msprobe", path=path)


@pytest.mark.execution
@needs_tool("msprobe", _msprobe(), "mindstudio-probe is not installed")
def test_precision_sides_compare_equal_and_a_skewed_npu_differs(tmp_path: Path) -> None:
    """The original (the GPU side, on the CPU without torch_npu) and the migrated script (under
    the stand-in) dump step 0 with msprobe; compare.sh finds them equal. An NPU whose linear is
    wrong (the stand-in's MSFT_STANDIN_SKEW) is reported different."""
    need_module("torch", "torch is not installed")
    run_kit("precision", PROJECTS / "precision_pair", tmp_path, "train.py")
    npu, gpu = tmp_path / "precision_pair_msft_precision", tmp_path / "precision_pair_gpu_precision"
    assert (npu / "train.py").read_bytes() != (gpu / "train.py").read_bytes()
    assert b"import torch_npu" not in (gpu / "train.py").read_bytes()
    log = tmp_path / "standin.jsonl"
    gpu_env = {k: v for k, v in _standin_env(log).items() if k != "PYTHONPATH"}
    path = f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"

    def run(script: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        return _bash(script, {**env, "PATH": path}, *args)

    for side, env in ((gpu, gpu_env), (npu, _standin_env(log))):
        proc = run(side / "run_precision.sh", env)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert list((side / "precision_dump" / "step0").glob("*/dump.json"))
    out = tmp_path / "equal"
    proc = run(
        npu / "compare.sh",
        gpu_env,
        str(npu / "precision_dump"),
        str(gpu / "precision_dump"),
        str(out),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    with next(out.glob("compare_result_*.csv")).open(encoding="utf-8", newline="") as fh:
        results = [row["Result"] for row in csv.DictReader(fh)]
    assert len(results) > 20 and set(results) == {"pass"}
    assert "equal" in proc.stdout
    skewed = tmp_path / "skewed_dump"
    proc = run(
        npu / "run_precision.sh",
        _standin_env(log, MSFT_STANDIN_SKEW="linear", MSFT_PRECISION_DUMP=str(skewed)),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / "skewed"
    proc = run(npu / "compare.sh", gpu_env, str(skewed), str(gpu / "precision_dump"), str(out))
    assert proc.returncode == 1, proc.stdout[-3000:]
    comparison = read_comparison(out, gpu / "precision_dump" / "step0")
    assert comparison.results["error"] >= 1 and comparison.differs
    assert "DIFFERENT" in proc.stdout


TRAINER = '''"""The training loop of a project whose script only calls it (a trainer module)."""

import torch


def fit(model, batches, steps):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(batches):
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}")
        if step + 1 == steps:
            break
'''
SCRIPT = """import torch

from trainer import fit

torch.manual_seed(0)
data = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(5)]
fit(torch.nn.Linear(3, 1).cuda(), data, steps=5)
print("FINAL")
"""


def test_a_loop_in_a_module_the_script_imports_takes_loop(tmp_path: Path) -> None:
    """Without --loop the script is refused with a hint; with it, the calls go into the trainer
    module, the runtime and the launcher stay with the script, which runs (and stops after its
    first step) under the stand-in."""
    project = tmp_path / "proj"
    (project / "pkg").mkdir(parents=True)
    (project / "run.py").write_text(SCRIPT.replace("from trainer", "from pkg.trainer"))
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "trainer.py").write_text(TRAINER)
    proc = _cli(
        "kit", "aoe", "-i", str(project), "-o", str(tmp_path / "o1"), "-m", "run.py", cwd=tmp_path
    )
    assert proc.returncode == 2
    assert proc.stderr.rstrip().endswith(
        "(a loop in a module the script imports, pkg/trainer.py: --loop pkg/trainer.py); "
        "nothing written"
    ), proc.stderr
    tree = run_kit("aoe", project, tmp_path / "o2", "run.py", "--loop", "pkg/trainer.py")
    assert [(r["File"], r["Rule"]) for r in kit_rows(tree)] == [
        ("pkg/trainer.py", rule) for rule in KIT_RULES["aoe"]
    ]
    assert (tree / "msft_kit.py").exists() and not (tree / "pkg" / "msft_kit.py").exists()
    assert 'main="$here/run.py"' in (tree / "run_aoe_npu.sh").read_text()
    need_module("torch", "torch is not installed")
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "aoe").write_text("#!/bin/sh\nexit 0\n")
    (tools / "aoe").chmod(0o755)
    log = tmp_path / "standin.jsonl"
    env = _standin_env(log, PATH=f"{tools}{os.pathsep}{os.environ['PATH']}")
    proc = _bash(tree / "run_aoe_npu.sh", env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "step 0 loss" in proc.stdout and "step 1 loss" not in proc.stdout
    assert "FINAL" not in proc.stdout
    assert [c["event"] for c in standin_calls(log)].count("npu.set_aoe") == 1


@pytest.mark.parametrize(
    "source",
    [
        "import torch\n\ndef train(loader, optimizer):\n    for x in loader:\n"
        "        # the closure\n        @torch.no_grad()\n        def closure():\n"
        "            return x\n        optimizer.step()\n",
        "import torch\n# train\nfor x in data:\n    optimizer.step()\n",
        "@dec\ndef f():\n    pass\nfor x in data:\n    optimizer.step()\n",
        "import torch\nfor x in data:\n    model(x.cuda()).sum().backward()\n"
        "    optimizer.step()\n",
    ],
    ids=[
        "decorated_first_statement",
        "loop_right_after_the_imports",
        "no_import_decorated",
        "with_import_torch_npu_at_the_same_place",
    ],
)
@pytest.mark.parametrize("kind", sorted(KIT_RULES))
def test_rows_name_the_lines_their_calls_land_on(source: str, kind: str) -> None:
    """A call goes above a decorated definition's decorators, and the import above a begin
    call at the same place: each row's line is its call's line in the written file."""
    from ms_fmk_transplt.engine import EngineOptions, migrate_source
    from ms_fmk_transplt.tables import load_tables

    result = migrate_source(source.encode(), "t.py", load_tables(""), EngineOptions(kit=kind))
    lines = result.output.decode().splitlines()
    assert [e.rule for e in result.events if e.rule.startswith("kit.")] == KIT_RULES[kind]
    for event in result.events:  # kit rows and import torch_npu: whole lines
        line = lines[event.out_start_line - 1]
        assert (
            line.strip() == event.after
            if event.rule != "tensor_methods.cuda_call"
            else (event.after in line)
        ), event


def test_precision_writes_neither_tree_when_one_exists(tmp_path: Path) -> None:
    (tmp_path / "precision_pair_msft_precision").mkdir()
    result = CliRunner().invoke(
        kit,
        ["precision", "-i", str(PROJECTS / "precision_pair"), "-o", str(tmp_path), "-m",
         "train.py"],
    )  # fmt: skip
    assert result.exit_code == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precision_pair_msft_precision"]


def test_a_pytorch_script_that_imports_tensorflow_gets_the_loop_route() -> None:
    """TensorFlow for summaries does not make a PyTorch training script a TF adapter script:
    its loop takes the kit's calls (it got the TF route's "no call is inserted" before)."""
    from ms_fmk_transplt.engine import EngineOptions, migrate_source
    from ms_fmk_transplt.tables import load_tables

    source = (
        b"import tensorflow as tf\nimport torch\n\nwriter = tf.summary.create_file_writer('l')\n"
        b"for x in data:\n    model(x.cuda()).sum().backward()\n    optimizer.step()\n"
    )
    result = migrate_source(source, "t.py", load_tables(""), EngineOptions(kit="aoe"))
    assert [e.rule for e in result.events if e.rule.startswith("kit.")] == KIT_RULES["aoe"]
    assert not [n for n in result.notices if n.rule == "kit.tensorflow"]


@pytest.mark.parametrize("kind", sorted(KIT_RULES))
def test_the_calls_after_the_tf_adapters_lines_land_where_their_rows_say(kind: str) -> None:
    """A script the span pass gives the TF adapter's lines (an estimator) that also trains a
    torch loop: the LibCST stage after it read lines the span pass had moved, and the run ended
    in an internal error (IndexError, as `distributed -m` did on any such file)."""
    from ms_fmk_transplt.engine import EngineOptions, migrate_source
    from ms_fmk_transplt.tables import load_tables

    source = (PROJECTS / "tf_estimator" / "train_estimator.py").read_bytes()
    source = source.replace(
        b"import tensorflow as tf\n", b"import tensorflow as tf\nimport torch\n"
    )
    source += b"\n\nfor x in data:\n    opt.step()\n"
    result = migrate_source(source, "t.py", load_tables(""), EngineOptions(kit=kind))
    lines = result.output.decode().splitlines()
    inserted = [e for e in result.events if e.operation.value == "INSERT"]
    assert {e.rule for e in inserted} >= set(KIT_RULES[kind]) | {"tf.adapter_import"}
    for event in inserted:
        assert lines[event.out_start_line - 1].strip() == event.after.splitlines()[0], event


def test_the_tree_of_a_pytorch_script_that_imports_tensorflow_is_a_pytorch_kit(
    tmp_path: Path,
) -> None:
    """The launcher and runtime follow the engine's route (kit.tensorflow), not the record's
    framework: TensorFlow imported for summaries still gets msft_kit.py and the set_aoe
    launcher."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text(
        "import tensorflow as tf\nimport torch\n\nwriter = tf.summary.create_file_writer('l')\n"
        "for x in data:\n    model(x.cuda()).sum().backward()\n    optimizer.step()\n"
    )
    tree = run_kit("aoe", project, tmp_path / "out", "train.py")
    assert [r["Rule"] for r in kit_rows(tree)] == KIT_RULES["aoe"]
    assert (tree / "msft_kit.py").exists()
    launcher = (tree / "run_aoe_npu.sh").read_text()
    assert "MSFT_AOE_DUMP" in launcher and "AOE_MODE" not in launcher


@pytest.mark.execution
def test_a_loop_shorter_than_the_profile_stops_the_profiler_at_exit(tmp_path: Path) -> None:
    need_module("torch", "torch is not installed")
    tree = run_kit("profile", PROJECTS / "clean_model", tmp_path, "train.py")
    log = tmp_path / "standin.jsonl"
    proc = _bash(tree / "run_profile_npu.sh", _standin_env(log, MSFT_PROF_SKIP_FIRST="100"))
    assert "FINAL" in proc.stdout  # the training ran to its end
    assert "msft_kit: profile: the loop ended before the profiled steps" in proc.stderr
    events = [c["event"] for c in standin_calls(log)]
    assert events.count("profiler.start") == 1 and events[-1] == "profiler.stop", events
    assert proc.returncode == 1 and "no *_ascend_pt trace" in proc.stderr
