"""Which files are training scripts: where the once-per-training-script advice goes
(advice.task_queue, advice.binary_kernels, advice.cpu_affinity; the ``training_entry``
pattern of rules/advice.json).

A training script is an entry point of the program model (program_model.py: a ``__main__``
guard, a script a launcher runs, a console script; ``ProgramFacts.programs``) whose own code
runs a training step: ``.backward(``, or a trainer's ``.train(`` / ``.fit(`` (``trainer.train()``
of an HF ``Trainer``, ``trainer.fit(model)`` of a Lightning one: a name holding "trainer"; a
module's ``model.train()`` only sets a mode), and that is PyTorch code: not a TensorFlow program's
entry nor a file importing TensorFlow or Keras (a Keras ``model.fit`` gets no torch_npu advice).
The row is placed on its ``if __name__ == "__main__":``.
A test is never one, whatever it calls: a file under a ``tests`` / ``test`` folder, a
``test_*.py`` / ``*_test.py`` module or a ``conftest.py``. Without a model (``--check``, the
docs build: one file at a time) the file's own ``__main__`` guard makes it an entry."""

from __future__ import annotations

import re

from ms_fmk_transplt.engine.program_facts import ProgramFacts

_TRAINING_CALL = re.compile(rb"\.backward\(|(?i:trainer)\s*\.\s*(?:train|fit)\s*\(")
TEST_FOLDERS = frozenset({"tests", "test"})
TENSORFLOW = "tensorflow"  # (Program.framework)
_TF_IMPORT = re.compile(rb"^[ \t]*(?:import|from)[ \t]+(?:tensorflow|tf_keras|keras)\b", re.M)


def trains(source: bytes) -> bool:
    """Whether the file's own code may run a training step (a byte-level test)."""
    return _TRAINING_CALL.search(source) is not None


def is_test(path: str) -> bool:
    """Whether the file is a test by its path (a folder of tests, a test module, conftest)."""
    *folders, name = path.replace("\\", "/").split("/")
    if TEST_FOLDERS.intersection(folders):
        return True
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


def training_script(path: str, source: bytes, programs: ProgramFacts | None) -> bool:
    """Whether ``path`` is a training script (module docstring); ``programs``: the run's program
    model, None when there is none (the file's own guard decides it is an entry)."""
    if is_test(path) or not trains(source) or _TF_IMPORT.search(source):
        return False
    if programs is None:
        return True
    return any(p.entry == path and p.framework != TENSORFLOW for p in programs.programs)
