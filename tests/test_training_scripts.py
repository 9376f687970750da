"""The once-per-training-script advice (advice.task_queue / binary_kernels / cpu_affinity) goes
on the entry points of the program model that train, never on tests
(engine/rules/advice/training_scripts.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import tool

from ms_fmk_transplt.engine.program_facts import Program, ProgramFacts, from_cached, to_cached
from ms_fmk_transplt.engine.rules.advice.training_scripts import (
    is_test,
    training_script,
    trains_at_module_level,
)
from ms_fmk_transplt.scan.program_model import build_programs
from ms_fmk_transplt.tables import load_tables

TRAIN = b"""import torch


def main():
    loss = torch.nn.Linear(2, 1).cuda()(torch.ones(1, 2).cuda()).sum()
    loss.backward()


if __name__ == "__main__":
    main()
"""
HF_TRAIN = b"""import torch
from transformers import Trainer


def main():
    trainer = Trainer(model=torch.nn.Linear(2, 1))
    trainer.train()


if __name__ == "__main__":
    main()
"""
CONVERT = b"""import torch


if __name__ == "__main__":
    torch.save(torch.load("a.pt", map_location="cuda"), "b.pt")
"""
EVAL = b"""import torch


def main():
    model = torch.nn.Linear(2, 1).cuda()
    model.eval()
    print(model(torch.ones(1, 2).cuda()))
    model.train()


if __name__ == "__main__":
    main()
"""
KERAS = b"""import torch
import tensorflow as tf


if __name__ == "__main__":
    tf.keras.Sequential().fit(x=None)
"""


@pytest.mark.parametrize(
    ("path", "test"),
    [
        ("tests/models/compare.py", True),
        ("test/train.py", True),
        ("pkg/test_train.py", True),
        ("pkg/train_test.py", True),
        ("conftest.py", True),
        ("recipes/full_finetune.py", False),
        ("latest/train.py", False),
        ("pkg/testing_utils.py", False),
    ],
)
def test_a_test_is_known_by_its_path(path: str, test: bool) -> None:
    assert is_test(path) is test


def test_the_model_decides_the_entries() -> None:
    """With a model, a file the model makes no entry of is no training script; without one (a
    single file), its own guard does."""
    entry = Program("recipes/train.py", "__main__ guard", "torch", "", "", 1)
    model = ProgramFacts((entry,), training=frozenset({"recipes/train.py"}))
    assert training_script("recipes/train.py", TRAIN, model)
    assert training_script("recipes/train.py", CONVERT, model)  # (its program trains)
    assert not training_script("recipes/other.py", TRAIN, model)
    assert training_script("recipes/other.py", TRAIN, None)
    assert not training_script("tests/train.py", TRAIN, None)
    assert not training_script("recipes/other.py", CONVERT, None)
    assert not training_script("recipes/train.py", TRAIN, ProgramFacts((entry,)))
    assert from_cached(to_cached(model)) == model


def test_entry_scripts_get_it_tests_do_not(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    files = {
        "recipes/train.py": TRAIN,
        "examples/scripts/sft.py": HF_TRAIN,
        "scripts/convert.py": CONVERT,
        "scripts/evaluate.py": EVAL,
        "tests/test_train.py": TRAIN,
        "tests/scripts/compare.py": TRAIN,
        "keras_train.py": KERAS,
    }
    for rel, data in files.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_bytes(data)
    proc = tool("-i", str(project), "-o", str(tmp_path / "out"), "-q")
    assert proc.returncode == 0, proc.stderr
    with (tmp_path / "out" / "proj_msft" / "advice.csv").open(encoding="utf-8") as fh:
        rows = [(r["File"], r["Rule"]) for r in csv.DictReader(fh)]
    placed = sorted({f for f, rule in rows if rule == "advice.binary_kernels"})
    assert placed == ["examples/scripts/sft.py", "recipes/train.py"]


@pytest.mark.parametrize(
    ("source", "line"),
    [
        (b"import x\ntrainer.fit()\n", 2),
        (b"x = 1\nwhile True:\n    y = 2\n\n    # step\n    loss.backward()\n", 6),
        (b"@torch.no_grad()\ndef f():\n    trainer.fit()\nfor b in data:\n    l.backward()\n", 5),
        # near misses: a function's, a method's
        (b"def f():\n    loss.backward()\n", 0),
        (b"def f(\n    a,\n) -> None:\n    loss.backward()\n", 0),
        (b"class A:\n    def f(self):\n        if 1:\n            trainer.train()\n", 0),
    ],
)
def test_module_level_training(source: bytes, line: int) -> None:
    assert trains_at_module_level(source) == line


# a project: entries that train through the modules they import, a recipe without a guard, a
# module run with -m; near misses: a test importing the training module, a utility entry
# importing nothing that trains (a function of the training module that does not train, one
# of a module importing the training module for another function, a
# utility module importing the training module in a function, a docstring's example,
# autograd's own backward, a custom Function's backward pass), a TPU (torch_xla) script
LOOP = b"""import torch


def fit(model, data):
    for x in data:
        step(model, x)


def step(model, x):
    model(x.cuda()).sum().backward()


def evaluate(model, data):
    return [model(x.cuda()) for x in data]
"""
TUNER = b"""import torch
from pkg.loop import fit


def run(model):
    fit(model, [])


def export(model):
    torch.save(model.cuda().state_dict(), "m.pt")
"""
EXPORT = b"""import torch
from pkg.tuner import export


if __name__ == "__main__":
    export(torch.nn.Linear(2, 1))
"""
LAUNCH = b"""import torch
from pkg.tuner import run


if __name__ == "__main__":
    run(torch.nn.Linear(2, 1).cuda())
"""
EVALUATE = b"""import torch
from pkg.loop import evaluate


if __name__ == "__main__":
    print(evaluate(torch.nn.Linear(2, 1).cuda(), []))
"""
UTILS = b"""import torch


def load(path):
    return torch.load(path, map_location="cuda")


def finetune(model):
    from pkg.loop import fit  # (runs only when finetune does)

    fit(model, [])
"""
HELPERS = b'''import torch


def context(model):
    """Example:
        with context(model):
            loss.backward()
    """
    # torch.autograd.backward(out, grad) in a custom Function
    return torch.autograd.backward


class Softmax(torch.autograd.Function):
    @staticmethod
    def backward(ctx, grad):
        return softmax_cuda.backward(grad, ctx.saved_tensors[0])
'''
ENTRY = b"""import torch
from pkg.loop import fit


def main():
    fit(torch.nn.Linear(2, 1).cuda(), [torch.ones(1, 2)])


if __name__ == "__main__":
    main()
"""
UTILITY = b"""import torch
from pkg.helpers import context
from pkg.utils import load


if __name__ == "__main__":
    torch.save(load("a.pt"), "b.pt")
"""
SMOKE = ENTRY
RECIPE = b"""import torch
from pkg.utils import load

model = load("m.pt")
print(torch.cuda.device_count())
trainer = Trainer(model)
trainer.fit()
"""
DASH_M = b"""import torch
from pkg.loop import fit

print(torch.cuda.is_available())
fit(torch.nn.Linear(2, 1), [])
"""
XLA = b"""import torch
import torch_xla.core.xla_model as xm
from pkg.loop import fit


if __name__ == "__main__":
    fit(torch.nn.Linear(2, 1).to(xm.xla_device()), [])
"""
LAUNCHER = b"torchrun --standalone --nproc_per_node=8 -m scripts.sft -- --run=x\n"


def _write(project: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_bytes(data)


PROGRAM_FILES = {
    "pkg/__init__.py": b"",
    "pkg/loop.py": LOOP,
    "pkg/utils.py": UTILS,
    "pkg/helpers.py": HELPERS,
    "tools/evaluate.py": EVALUATE,
    "pkg/tuner.py": TUNER,
    "tools/export.py": EXPORT,
    "launch.py": LAUNCH,
    "train.py": ENTRY,
    "tools/convert.py": UTILITY,
    "tests/smoke.py": SMOKE,
    "recipes/ljspeech/train_tts.py": RECIPE,
    "scripts/sft.py": DASH_M,
    "runs/speedrun.sh": LAUNCHER,
    "extensions/xla/finetune.py": XLA,
}


def test_the_program_model_knows_which_programs_train() -> None:
    modules = {k: v for k, v in PROGRAM_FILES.items() if k.endswith(".py")}
    launchers = {"runs/speedrun.sh": LAUNCHER.decode()}
    facts = build_programs(modules, {}, launchers, {}, load_tables().tf_migration)
    found = {p.entry: p.found_by for p in facts.programs}
    assert found["recipes/ljspeech/train_tts.py"] == "module-level training code (line 7)"
    assert found["scripts/sft.py"] == "launcher runs/speedrun.sh:1"
    trained = {"train.py", "launch.py", "recipes/ljspeech/train_tts.py", "scripts/sft.py"}
    assert facts.training == trained
    assert "training ['launch.py', 'recipes/ljspeech/train_tts.py'" in facts.fingerprint()
    near_misses = {"tools/convert.py", "tools/evaluate.py", "tools/export.py", "tests/smoke.py"}
    assert near_misses | {"extensions/xla/finetune.py"} <= set(found)


def test_entries_training_through_their_program_get_it(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    _write(project, PROGRAM_FILES)
    proc = tool("-i", str(project), "-o", str(tmp_path / "out"), "-q", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out" / "proj_msft"
    with (out / "advice.csv").open(encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r["Rule"] == "advice.binary_kernels"]
    assert [(r["File"], r["Line"]) for r in rows] == [("launch.py", "6")]
    assert rows[0]["API"].startswith(
        'if __name__ == "__main__" or module-level code of 4 training scripts ('
    )
    log = (out / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    listed = [line for line in log.splitlines() if "[advice.binary_kernels] one advice" in line]
    # (migrated lines, below import torch_npu: the recipe's trainer.fit(), the -m script's
    # first module-level call, the entry's guard)
    assert listed[0].endswith(
        "training scripts: launch.py:6, recipes/ljspeech/train_tts.py:8, scripts/sft.py:5, "
        "train.py:10"
    )
