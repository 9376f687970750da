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


class _Split:
    """A module's byte-level split (``_blocks``) and what is read of each part, once per run
    however many programs reach the module, by however many names."""

    def __init__(self, source: bytes) -> None:
        self.blocks, rest = _blocks(source)
        self.rest_trains = runs_training(rest)
        self.rest_words = (
            frozenset()
            if self.rest_trains
            else frozenset(w.decode() for w in _WORD.findall(_IMPORT_LINES.sub(b"", rest)))
        )
        self._read: dict[bytes, tuple[bool, frozenset[bytes], frozenset[str]]] = {}

    def block(self, name: bytes) -> tuple[bool, frozenset[bytes], frozenset[str]]:
        """Whether the block runs a training step, and the words its code names (as bytes
        and as text)."""
        found = self._read.get(name)
        if found is None:
            code = self.blocks[name]
            words = frozenset(_WORD.findall(code))
            found = runs_training(code), words, frozenset(w.decode() for w in words)
            self._read[name] = found
        return found


def _names_reach(split: _Split, names: frozenset[str]) -> Reach:
    """Whether the module's module-level code, or the functions and classes ``names`` name
    (and those their code names, in the module), run a training step; and the words that
    code names, with ``names`` (the imports binding one of them are followed on)."""
    if split.rest_trains:
        return True, None
    words = set(names) | split.rest_words
    todo = [n for n in (name.encode() for name in names) if n in split.blocks]
    seen = set(todo)
    while todo:
        trained, code_words, code_text = split.block(todo.pop())
        if trained:
            return True, None
        for word in code_words - seen:
            if word in split.blocks:
                seen.add(word)
                todo.append(word)
        words |= code_text
    return False, frozenset(words)


def _bound(line: Import) -> set[str]:
    """The names an import line binds (as program_model reads them: before any ``as``)."""
    level, module, names = line
    return set(names) if names else {module.split(".")[0]} if module else set()


def training_entries(
    entries: Iterable[str],
    modules: dict[str, bytes],
    imports: dict[str, list[Import]],
    top_imports: Callable[[str], list[Import]],
    resolve: Resolve,
) -> frozenset[str]:
    """The entries (no TensorFlow program's) whose program trains; ``imports``: every import
    line of each module, ``top_imports``: a module's unindented ones, by its path."""
    walk = _Walk(modules, imports, top_imports, resolve)
    return frozenset(
        entry
        for entry in entries
        if not is_test(entry) and not tpu_script(modules[entry]) and walk.trains(entry)
    )


class _Walk:
    """The walk of every program from its entry, each module read once however many
    programs reach it (the files its unindented imports name, its blocks)."""

    def __init__(
        self,
        modules: dict[str, bytes],
        imports: dict[str, list[Import]],
        top_imports: Callable[[str], list[Import]],
        resolve: Resolve,
    ) -> None:
        self.modules = modules
        self.imports = imports
        self.top_imports = top_imports
        self.resolve = resolve
        self.known: dict[tuple[str, frozenset[str] | None], Reach] = {}
        self.splits: dict[str, _Split] = {}
        self.edges: dict[str, Edges] = {}

    def trains(self, entry: str) -> bool:
        if trains(self.modules[entry]):
            return True
        seen: set[tuple[str, frozenset[str] | None]] = {(entry, None)}
        order: list[tuple[str, frozenset[str] | None]] = [(entry, None)]
        for path, words in order:  # (order grows as the walk goes)
            for target, names in self.imported(path, entry, words).items():
                trained, named = self.reach(target, names)
                if trained:
                    return True
                if (target, names) not in seen:
                    seen.add((target, names))
                    order.append((target, named))
        return False

    def reach(self, path: str, names: frozenset[str] | None) -> Reach:
        found = self.known.get((path, names))
        if found is None:
            if names is None:
                found = (runs_training(self.modules[path]), None)
            else:
                split = self.splits.get(path)
                if split is None:
                    split = self.splits[path] = _Split(self.modules[path])
                found = _names_reach(split, names)
            self.known[(path, names)] = found
        return found

    def imported(self, path: str, entry: str, words: frozenset[str] | None) -> Edges:
        """The files the module's import lines name (every line of the entry's, the
        unindented ones of the others); of the lines binding one of ``words`` when the
        module was reached by name (the imports its reached code uses)."""
        if path == entry:
            lines = self.imports[entry]
        elif words is None and path in self.edges:
            return self.edges[path]
        else:
            lines = self.top_imports(path)
        if words is not None:
            lines = [line for line in lines if not words.isdisjoint(_bound(line))]
            return _edges(path, lines, self.resolve)
        found = _edges(path, lines, self.resolve)
        if path != entry:
            self.edges[path] = found
        return found
