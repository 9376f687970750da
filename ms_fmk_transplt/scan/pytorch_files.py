"""Which Python files of the input belong to no PyTorch program (part of the program model,
program_model.py; asked for through ``ProgramFacts.pytorch``): the PyTorch rules do not run on
them, as they do not run on a TensorFlow file that imports no torch.

A file is PyTorch code when it imports torch or a library built on it (the table's
``imports.torch_libraries``). A file that imports neither that nor TensorFlow belongs to a
PyTorch program when the project's imports link it to PyTorch code: it imports such a file, at
any depth, or a file that does imports it, at any depth (a helper module of a training script).
A TensorFlow file whose torch imports are all indented (``if is_torch_available(): import
torch``, a ``try`` / ``except ImportError``: an optional backend, as Hugging Face's utilities
have) is not PyTorch code for this: its helpers are the TensorFlow program's.
A loose script (it imports nothing but the standard library, and no file of the project imports
it: a snippet, a config, a launcher running the training script through subprocess) is judged
by the input: PyTorch code unless the input is TensorFlow code only. Every other file (a Triton
client using tritonclient and numpy, a helper of a TensorFlow program) is of no PyTorch
program."""

from __future__ import annotations

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
    tf_top_level: dict[str, list[Import]] | None = None,
) -> frozenset[str]:
    """The files (not TensorFlow files) of no PyTorch program: ``imports``, each file's import
    lines; ``graph``, the project modules each file imports; ``tf_top_level``, the unindented
    import lines of each TensorFlow file (its torch imports, if all indented, are optional)."""
    libraries = table.torch_libraries
    top_level = tf_top_level or {}

    def torch_of(lines: list[Import]) -> bool:
        return any(not level and module.split(".")[0] in libraries for level, module, _ in lines)

    users = {
        path
        for path, lines in imports.items()
        if torch_of(lines) and (path not in top_level or torch_of(top_level[path]))
    }
    importers: dict[str, list[str]] = {}
    for path, targets in graph.items():
        for target in targets:
            importers.setdefault(target, []).append(path)
    linked = _reached(_reached(users, importers), graph)
    imported = set(importers)
    loose_ok = bool(users) or not tf_files  # the input is not TensorFlow code only
    return frozenset(
        path
        for path, lines in imports.items()
        if path not in linked
        and path not in tf_files
        and not (loose_ok and path not in imported and _standard(lines, table.standard_library))
    )


def _standard(lines: list[Import], standard: frozenset[str]) -> bool:
    """Whether the file imports nothing but the standard library (``from __future__`` too)."""
    return all(not level and module.split(".")[0] in standard for level, module, _ in lines)
