"""Which Python files of the input belong to no PyTorch program (part of the program model,
program_model.py; asked for through ``ProgramFacts.pytorch``): the PyTorch rules do not run on
them, as they do not run on a TensorFlow file that imports no torch.

A file is PyTorch code when it imports torch or a library built on it (the table's
``imports.torch_libraries``). A file that imports neither that nor TensorFlow belongs to a
PyTorch program when the project's imports link it to PyTorch code: it imports such a file, at
any depth, or a file that does imports it, at any depth (a helper module of a training script).
A TensorFlow file whose torch imports are all indented (``if is_torch_available(): import
torch``, a ``try`` / ``except ImportError``: an optional backend, as Hugging Face's utilities
have) is not PyTorch code for this: its helpers are the TensorFlow program's; nor is a file
whose only torch "imports" are indented lines of its docstrings (``from transformers import
...`` in an example), which the line reader of program_model cannot tell from code.
A loose script (it imports nothing but the standard library, and no file of the project imports
it: a snippet, a config, a launcher running the training script through subprocess) is judged
by the input: PyTorch code unless the input is TensorFlow code only (an optional torch backend
of a TensorFlow file makes it not). Every other file (a Triton
client using tritonclient and numpy, a helper of a TensorFlow program) is of no PyTorch
program."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from ms_fmk_transplt.tables.table_sections import ImportsTable

Import = tuple[int, str, list[str]]  # as program_model reads an import line


def _reached(start: Iterable[str], edges: dict[str, list[str]]) -> set[str]:
    """``start`` and every file reached from it along ``edges``."""
    seen = set(start)
    todo = list(seen)
    while todo:
        for target in edges.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def not_pytorch(
    imports: dict[str, list[Import]],
    graph: dict[str, list[str]],
    tf_files: set[str],
    table: ImportsTable,
    optional: set[str] | frozenset[str] = frozenset(),
) -> frozenset[str]:
    """The files (not TensorFlow files) of no PyTorch program: ``imports``, each file's import
    lines; ``graph``, the project modules each file imports; ``optional``, files whose torch
    imports make them no PyTorch code (program_model._optional_torch)."""
    users = {
        path
        for path, lines in imports.items()
        if torch_imports(lines, table) and path not in optional
    }
    importers: dict[str, list[str]] = {}
    for path, targets in graph.items():
        for target in targets:
            importers.setdefault(target, []).append(path)
    linked = _reached(_reached(users, importers), graph)
    imported = set(importers)
    # the input is not TensorFlow code only: a TensorFlow file with an optional torch backend
    # counts here (it links nothing, but the input runs torch code paths)
    loose_ok = bool(users) or bool(optional & tf_files) or not tf_files
    return frozenset(
        path
        for path, lines in imports.items()
        if path not in linked
        and path not in tf_files
        and not (loose_ok and path not in imported and _standard(lines, table.standard_library))
    )


def torch_imports(lines: list[Import], table: ImportsTable) -> bool:
    """Whether the import lines name torch or a library built on it."""
    libraries = table.torch_libraries
    return any(not level and module.split(".")[0] in libraries for level, module, _ in lines)


def imports_torch(source: bytes, table: ImportsTable) -> bool:
    """Whether the module's code (not its strings) imports torch or a library built on it; a
    module that does not parse is taken to."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    libraries = table.torch_libraries
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            roots = [node.module.split(".")[0]]
        else:
            continue
        if any(root in libraries for root in roots):
            return True
    return False


def _standard(lines: list[Import], standard: frozenset[str]) -> bool:
    """Whether the file imports nothing but the standard library (``from __future__`` too)."""
    return all(not level and module.split(".")[0] in standard for level, module, _ in lines)
