"""Which programs train (``ProgramFacts.training``, program_model.py asks once per run; the
advice family's training_scripts.py says what a training script is and tests the bytes).

- A module no other module of the project imports, with no ``__main__`` guard, whose
  module-level code calls ``.backward(`` or a trainer's ``.train(`` / ``.fit(`` is an entry (a
  recipe that runs ``trainer.fit()`` at module level): ``module_level_entries``.
- An entry trains when its own code holds such a call, or a project module its program
  imports runs one (training_scripts.runs_training: not in a comment or a docstring's
  example, not autograd's own ``backward``); the entry is no test, imports no ``torch_xla``
  unindented (a TPU script) and its program is not TensorFlow's: ``training_entries``.
  The program is followed through every import of the entry (a command line's dispatch
  imports in its functions: ``llamafactory-cli train``) and through the unindented imports of
  the modules below it: an import inside a library's function runs only when that function
  does (gpt-neox's ``megatron/utils.py`` imports its training module in one function: every
  tool importing the utilities would otherwise be a training script). A module reached by
  ``from m import a, b`` trains when its module-level code does, or the functions and classes
  ``a`` and ``b`` name, with those their code names in turn (byte-level blocks, ``_blocks``):
  gpt-neox's ``eval.py`` imports ``forward_step`` from the training module, ``train.py``
  imports ``pretrain``, which reaches ``backward_step``; and the walk goes on from it only
  through the imports binding a name that code uses (a package's ``__init__`` re-exporting
  the name: the import binding it): LLaMA-Factory's web UI imports ``export_model`` from the
  module whose ``run_exp`` trains."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from ms_fmk_transplt.engine.rules.family_exports import (
    is_test,
    runs_training,
    tpu_script,
    trains,
    trains_at_module_level,
)

TRAINING_CODE = "module-level training code"  # how such a module is an entry (Program.found_by)
Import = tuple[int, str, list[str]]  # (program_model._imports)
Resolve = Callable[[str, int, str, list[str]], list[str]]  # (program_model._Modules.resolve)
Edges = dict[str, "frozenset[str] | None"]  # imported file -> the names imported (None: all)

_BLOCK = re.compile(rb"(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)")
_WORD = re.compile(rb"[A-Za-z_]\w*")
_CONTINUED = b" \t\r\n#)]}@"
_IMPORT_LINES = re.compile(
    rb"^(?:from[ \t]+\S+[ \t]+)?import[ \t]+(?:\([^)]*\)|[^\n]*)", re.M
)  # a line starting so continues the block above (or decorates)


def module_level_entries(
    modules: dict[str, bytes], imported: set[str], skipped: Iterable[str]
) -> dict[str, str]:
    """Entry file -> how it was found, for the modules nobody imports (``imported``) that are
    no entry yet nor TensorFlow (``skipped``) and train at module level."""
    skip = set(skipped)
    found: dict[str, str] = {}
    for path, source in sorted(modules.items()):
        if path in imported or path in skip:
            continue
        line = trains_at_module_level(source)
        if line:
            found[path] = f"{TRAINING_CODE} (line {line})"
    return found


def _edges(path: str, lines: list[Import], resolve: Resolve) -> Edges:
    """The project files a module's import lines name, each with the names imported from it
    (None: the module itself is imported, ``import m`` / ``from pkg import m``)."""
    edges: Edges = {}
    for level, module, names in lines:
        itself = set(resolve(path, level, module, [])) if module else set()
        for target in resolve(path, level, module, names):
            known = edges.get(target, frozenset())
            if target == path:
                continue
            if target in itself and names and known is not None:
                edges[target] = known | frozenset(names)
            else:
                edges[target] = None
    return edges


def _blocks(source: bytes) -> tuple[dict[bytes, bytes], bytes]:
    """The module's top-level functions and classes (name -> code) and the rest, its
    module-level code (a byte-level split at unindented lines)."""
    blocks: dict[bytes, list[bytes]] = {}
    rest: list[bytes] = []
    current = rest
    for line in source.splitlines(keepends=True):
        if line[:1] not in _CONTINUED:
            found = _BLOCK.match(line)
            current = blocks.setdefault(found.group(1), []) if found else rest
        current.append(line)
    return {name: b"".join(lines) for name, lines in blocks.items()}, b"".join(rest)


Reach = tuple[bool, "frozenset[str] | None"]  # trains, the words its reached code names


def _names_reach(source: bytes, names: frozenset[str]) -> Reach:
    """Whether the module's module-level code, or the functions and classes ``names`` name
    (and those their code names, in the module), run a training step; and the words that
    code names, with ``names`` (the imports binding one of them are followed on)."""
    blocks, rest = _blocks(source)
    words = set(names)
    if runs_training(rest):
        return True, None
    words.update(w.decode() for w in _WORD.findall(_IMPORT_LINES.sub(b"", rest)))
    todo = [n for n in (name.encode() for name in names) if n in blocks]
    seen = set(todo)
    while todo:
        code = blocks[todo.pop()]
        if runs_training(code):
            return True, None
        for word in set(_WORD.findall(code)) - seen:
            words.add(word.decode())
            if word in blocks:
                seen.add(word)
                todo.append(word)
    return False, frozenset(words)


def _bound(line: Import) -> set[str]:
    """The names an import line binds (as program_model reads them: before any ``as``)."""
    level, module, names = line
    return set(names) if names else {module.split(".")[0]} if module else set()


def training_entries(
    entries: Iterable[str],
    modules: dict[str, bytes],
    imports: dict[str, list[Import]],
    top_imports: Callable[[bytes], list[Import]],
    resolve: Resolve,
) -> frozenset[str]:
    """The entries (no TensorFlow program's) whose program trains; ``imports``: every import
    line of each module, ``top_imports`` reads a module's unindented ones."""
    known: dict[tuple[str, frozenset[str] | None], Reach] = {}

    def reach(path: str, names: frozenset[str] | None) -> Reach:
        found = known.get((path, names))
        if found is None:
            source = modules[path]
            if names is None:
                found = (runs_training(source), None)
            else:
                found = _names_reach(source, names)
            known[(path, names)] = found
        return found

    def program_trains(entry: str) -> bool:
        if trains(modules[entry]):
            return True
        seen: set[tuple[str, frozenset[str] | None]] = {(entry, None)}
        order: list[tuple[str, frozenset[str] | None]] = [(entry, None)]
        for path, words in order:  # (order grows as the walk goes)
            lines = imports[entry] if path == entry else top_imports(modules[path])
            if words is not None:  # (reached by name: the imports its reached code uses)
                lines = [line for line in lines if not words.isdisjoint(_bound(line))]
            for target, names in _edges(path, lines, resolve).items():
                trained, named = reach(target, names)
                if trained:
                    return True
                if (target, names) not in seen:
                    seen.add((target, names))
                    order.append((target, named))
        return False

    return frozenset(
        entry
        for entry in entries
        if not is_test(entry) and not tpu_script(modules[entry]) and program_trains(entry)
    )
