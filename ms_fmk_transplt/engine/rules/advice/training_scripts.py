"""Which files are training scripts: where the once-per-training-script advice goes
(advice.task_queue, advice.binary_kernels, advice.cpu_affinity; the ``training_entry``
pattern of rules/advice.json).

A training script is an entry point of the program model (program_model.py: a ``__main__``
guard, a script a launcher runs, ``python x.py`` or ``python -m pkg.x``, a console script, a
module nobody imports whose unindented code trains; ``ProgramFacts.programs``) whose program
runs a training step (``ProgramFacts.training``, computed once in the scan,
scan/training_programs.py): the entry or a project module it imports, at any depth, calls
``.backward(`` or a trainer's ``.train(`` / ``.fit(`` (``trainer.train()`` of an HF ``Trainer``,
``trainer.fit(model)`` of a Lightning one: a name holding "trainer"; a module's
``model.train()`` only sets a mode). It is PyTorch code for the NPU: not a TensorFlow program's
entry nor a file importing TensorFlow or Keras (a Keras ``model.fit`` gets no torch_npu
advice), nor a TPU script (the entry imports ``torch_xla`` unindented).
A test is never one, whatever it calls: a file under a ``tests`` / ``test`` folder, a
``test_*.py`` / ``*_test.py`` module or a ``conftest.py``.

The row is placed on the entry's ``if __name__ == "__main__":``; an entry without one (a
recipe whose module-level code calls ``trainer.fit()``, a script run as ``python -m``) gets it
on its first module-level statement whose code trains, else its first module-level call.
Without a model (``--check``, the docs build: one file at a time) the file's own ``__main__``
guard makes it an entry, and its own code must train."""

from __future__ import annotations

import ast
import re

from ms_fmk_transplt.engine.program_facts import ProgramFacts

_TRAINING_CALL = re.compile(rb"\.backward\(|(?i:trainer)\s*\.\s*(?:train|fit)\s*\(")
# a training call in code a program imports: not on a comment or a doctest line, not autograd's
# own ``torch.autograd.backward(`` nor an extension's ``xentropy_lib.backward(``
_LIBRARY_CALL = re.compile(
    rb"^(?![ \t]*(?:#|>>>|\.\.\.))[^\n]*?"
    rb"(?:(?<!autograd)(?<!lib)\.backward\(|(?i:trainer)\s*\.\s*(?:train|fit)\s*\()",
    re.M,
)
_FUNCTION = re.compile(rb"(?:^|[\r\n])[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)")
_TRIPLE_QUOTES = re.compile(rb'"""|\'\'\'')
# an unindented line that starts a function or a class: the code below it is theirs
# a line starting with these starts no statement: indented, blank, a comment, the closing
# bracket of a statement above (``) -> None:`` of a ``def`` whose parameters span lines)
_NOT_A_STATEMENT = b" \t\r\n#)]}"
_DEFINES = re.compile(rb"(?:def|class|async[ \t]+def)\b|@")
_TPU_IMPORT = re.compile(rb"(?:^|[\r\n])(?:import|from)[ \t]+torch_xla\b")
MAIN_GUARD = re.compile(rb"__name__\s*==\s*[\"']__main__")  # (the training_entry pattern)
TEST_FOLDERS = frozenset({"tests", "test"})
TENSORFLOW = "tensorflow"  # (Program.framework)
_TF_IMPORT = re.compile(rb"(?:^|[\r\n])[ \t]*(?:import|from)[ \t]+(?:tensorflow|tf_keras|keras)\b")
GUARD_API = 'if __name__ == "__main__" (training script)'
MODULE_API = "module-level code (training script without a __main__ guard)"


def trains(source: bytes) -> bool:
    """Whether the file's own code may run a training step (a byte-level test)."""
    return _TRAINING_CALL.search(source) is not None


def runs_training(source: bytes) -> bool:
    """Whether a module a program imports runs a training step (trains' test, stricter: not in
    a comment, a doctest or a docstring's example, not autograd's or an extension's
    ``backward``, not in a ``def backward`` of a custom autograd Function)."""
    if _TRAINING_CALL.search(source) is None:
        return False
    for found in _LIBRARY_CALL.finditer(source):
        if len(_TRIPLE_QUOTES.findall(source, 0, found.start())) % 2:
            continue  # (inside a triple-quoted string)
        functions = _FUNCTION.findall(source, 0, found.start())
        if not functions or functions[-1] != b"backward":
            return True  # (not a custom autograd Function's backward pass)
    return False


def trains_at_module_level(source: bytes) -> int:
    """The line of the file's first training call in module-level code (0: none): on an
    unindented line, or under one (a module-level ``for`` / ``while`` / ``with`` loop) that
    starts no ``def`` or ``class`` (a byte-level test; a closing bracket at the line's start
    belongs to the statement above)."""
    for found in _TRAINING_CALL.finditer(source):
        start = source.rfind(b"\n", 0, found.start()) + 1
        while start and source[start : start + 1] in _NOT_A_STATEMENT:
            start = source.rfind(b"\n", 0, start - 1) + 1
        if not _DEFINES.match(source, start):
            return source.count(b"\n", 0, found.start()) + 1
    return 0


def tpu_script(source: bytes) -> bool:
    """Whether the file imports torch_xla unindented: a TPU script, no NPU training script."""
    return b"torch_xla" in source and _TPU_IMPORT.search(source) is not None


def is_test(path: str) -> bool:
    """Whether the file is a test by its path (a folder of tests, a test module, conftest)."""
    *folders, name = path.replace("\\", "/").split("/")
    if TEST_FOLDERS.intersection(folders):
        return True
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


def training_script(path: str, source: bytes, programs: ProgramFacts | None) -> bool:
    """Whether ``path`` is a training script (module docstring); ``programs``: the run's program
    model, None when there is none (the file's own guard decides it is an entry)."""
    if programs is not None and path not in programs.training:
        return False  # (before the byte-level tests: they scan the whole file)
    if is_test(path) or _TF_IMPORT.search(source) or tpu_script(source):
        return False
    if programs is None:
        return trains(source) and MAIN_GUARD.search(source) is not None
    return True


def training_place(tree: ast.Module, source: bytes) -> tuple[ast.stmt, str] | None:
    """Where a training script's row goes and the API it names (module docstring)."""
    for stmt in tree.body:
        if isinstance(stmt, ast.If) and is_main_guard(stmt.test):
            return stmt, GUARD_API
    lines = source.splitlines(keepends=True)
    for stmt in tree.body:
        end = stmt.end_lineno or stmt.lineno
        if trains(b"".join(lines[stmt.lineno - 1 : end])):
            return stmt, MODULE_API
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            return stmt, MODULE_API
    return None


def is_main_guard(test: ast.AST) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )
