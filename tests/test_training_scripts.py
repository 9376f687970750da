"""The once-per-training-script advice (advice.task_queue / binary_kernels / cpu_affinity) goes
on the entry points of the program model that train, never on tests
(engine/rules/advice/training_scripts.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import tool

from ms_fmk_transplt.engine.program_facts import Program, ProgramFacts
from ms_fmk_transplt.engine.rules.advice.training_scripts import is_test, training_script

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
    model = ProgramFacts((Program("recipes/train.py", "__main__ guard", "torch", "", "", 1),))
    assert training_script("recipes/train.py", TRAIN, model)
    assert not training_script("recipes/other.py", TRAIN, model)
    assert training_script("recipes/other.py", TRAIN, None)
    assert not training_script("tests/train.py", TRAIN, None)
    assert not training_script("recipes/train.py", CONVERT, model)
    tf_model = ProgramFacts((Program("train.py", "__main__ guard", "tensorflow", "2", "", 1),))
    assert not training_script("train.py", TRAIN, tf_model)


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
