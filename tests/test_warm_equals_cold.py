"""A warm cache never changes a result (issue 44): for EVERY option the schema says changes
results (``option_schema.SCHEMA``, ``result=True``), a run whose cache was filled by a run
without it gives the outputs of a cold run with it, byte for byte (the migrated files,
change_list.csv, unsupported_op.csv, every other report but the log and the workbook).

The options are enumerated from the schema: a new result-changing option fails
``test_every_result_option_has_a_probe`` until it gets a probe here (the value that shows its
effect on this project), and each probe must change the output (``cold != filled``), so an
option missing from the cache fingerprint makes the warm run reuse the filled run's entries
and fails ``test_a_warm_cache_gives_the_cold_run``."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from test_trust_cache import tree

from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.commands.kit_cli import kit
from ms_fmk_transplt.user_options.option_schema import KIT, SCHEMA

ROOT = Path(__file__).resolve().parent.parent
RULES = str(ROOT / "rules" / "examples" / "func_rename.json")
TRAIN = (ROOT / "fixtures" / "projects" / "clean_model" / "train.py").read_text(encoding="utf-8")
FILES = {
    # one training loop: the -m of distributed and of a kit; it imports loop2.py, which holds
    # another one: a kit's --loop (a file MAIN imports)
    "train.py": "import loop2\n" + TRAIN,
    "loop2.py": TRAIN,
    "devices.py": "import torch\ntorch.cuda.set_device(1)\nx = torch.ones(2).cuda()\n",
    "norms.py": "from apex.normalization import FusedLayerNorm\nn = FusedLayerNorm(4)\n",
    "gap.py": "import torch\n\ntorch.cuda.synchronize()\nstats = torch.cuda.host_memory_stats()\n",
    "attention.py": (  # a library's row, folded (the lines: the input's with --analyse)
        "import torch\nfrom flash_attn import flash_attn_func\n\nx = torch.ones(2).cuda()\n"
        "y = flash_attn_func(x, x, x)\nz = flash_attn_func(y, y, y)\n"
    ),
    "tf_train.py": "import tensorflow as tf\nc = tf.estimator.RunConfig()\n",
    # a fake installed library whose API moves its argument to CUDA (fixtures/deps)
    "moves.py": "import torch\nimport fakelib_direct\ny = fakelib_direct.move(torch.ones(2))\n",
    "dist_main.py": (
        ROOT / "fixtures/rules/distributed_mode.unwrapped_model/misnamed_model.py"
    ).read_text(encoding="utf-8"),
}
DISTRIBUTED = ("distributed", "-m", "train.py")
AOE = ("aoe", "-m", "train.py")
ASSESS = ("assess", "-m", "train.py")
# option -> (the command, the arguments of the run that fills the cache, those of the run with
# the option changed: the same plus it, or with its value changed)
PROBES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "rule_file": ("run", (), ("-r", RULES)),
    "specify_device": ("run", (), ("-s",)),
    "similar": ("run", (), ("-sim",)),
    "target_version": ("run", (), ("-v", "2.1.0")),
    "analyse": ("run", (), ("--analyse",)),
    "library": ("run", ("--analyse",), ("--analyse", "--library")),
    "deps": ("run", (), ("--deps", str(ROOT / "fixtures/deps/site-packages"))),
    # what kit assess recorded: an unsupported API and a dynamic shape at devices.py:3
    "assessed": ("run", (), ("--assessed", str(ROOT / "fixtures/assess/ops.csv"))),
    "max_file_mib": ("run", (), ("--max-file-size", "0.001")),  # every file is larger
    "file_timeout": ("run", (), ("--file-timeout", "0.000001")),  # every file takes longer
    "select": ("run", (), ("--select", "tensor_methods")),
    "ignore": ("run", (), ("--ignore", "tensor_methods")),
    "npu_options": ("run", (), ("--npu-option", "precision_mode=allow_mix_precision")),
    "no_todo_comments": (  # (a line distributed -m could not finish)
        "run",
        ("distributed", "-m", "dist_main.py"),
        ("--no-todo-comments", "distributed", "-m", "dist_main.py"),
    ),
    "main_file": ("run", DISTRIBUTED, ("distributed", "-m", "dist_main.py")),
    "targets": ("run", DISTRIBUTED, (*DISTRIBUTED, "-t", "net")),
    "no_rank_guards": ("run", DISTRIBUTED, (*DISTRIBUTED, "--no-rank-guards")),
    "kind": (KIT, AOE, ("profile", "-m", "train.py")),
    "loop_file": (KIT, AOE, (*AOE, "--loop", "loop2.py")),
    "kit_steps": (KIT, ASSESS, (*ASSESS, "--steps", "3")),
}


def test_every_result_option_has_a_probe() -> None:
    """Enumerated from the schema: a result-changing option without a probe fails here."""
    assert sorted(PROBES) == sorted(o.param for o in SCHEMA if o.result)


def invoke(command: str, src: Path, out: Path, args: tuple[str, ...], *cache: str) -> None:
    """One run of ``command`` (a kit: ``args`` start with its KIND; the run: ``args`` end with
    its ``distributed`` part, if any)."""
    common = ["-q", "-j", "1", "-i", str(src), "-o", str(out), *cache]
    if command == KIT:
        result = CliRunner().invoke(kit, [args[0], *common, *args[1:]])
    else:
        result = CliRunner().invoke(main, [*common, *args])
    assert result.exit_code == 0, (args, result.output)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("warm") / "proj"
    src.mkdir()
    for rel, text in FILES.items():
        (src / rel).write_text(text, encoding="utf-8")
    return src


@pytest.mark.parametrize("option", sorted(PROBES))
def test_a_warm_cache_gives_the_cold_run(option: str, project: Path, tmp_path: Path) -> None:
    command, filled_args, changed_args = PROBES[option]
    cache = ("--cache-dir", str(tmp_path / "cache"))
    invoke(command, project, tmp_path / "filled", filled_args, *cache)
    invoke(command, project, tmp_path / "warm", changed_args, *cache)
    invoke(command, project, tmp_path / "cold", changed_args, "--no-cache")
    cold = tree(tmp_path / "cold")
    assert tree(tmp_path / "warm") == cold
    assert cold != tree(tmp_path / "filled")  # the probe shows the option's effect
