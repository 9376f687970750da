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
  tool importing the utilities would otherwise be a training script)."""

from __future__ import annotations

from collections.abc import Iterable

from ms_fmk_transplt.engine.rules.family_exports import (
    is_test,
    runs_training,
    tpu_script,
    trains,
    trains_at_module_level,
)

TRAINING_CODE = "module-level training code"  # how such a module is an entry (Program.found_by)


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


def training_entries(
    entries: Iterable[str],
    graph: dict[str, list[str]],
    top_graph: dict[str, list[str]],
    modules: dict[str, bytes],
) -> frozenset[str]:
    """The entries (no TensorFlow program's) whose program trains; ``graph``: every import of
    each module, ``top_graph``: its unindented ones."""
    known: dict[str, bool] = {}

    def train(path: str) -> bool:
        found = known.get(path)
        if found is None:
            found = known[path] = runs_training(modules[path])
        return found

    def program_trains(entry: str) -> bool:
        if trains(modules[entry]):
            return True
        seen = {entry}
        order = [entry]
        for path in order:  # (order grows as the walk goes)
            for target in (graph if path == entry else top_graph).get(path, ()):
                if target not in seen:
                    if train(target):
                        return True
                    seen.add(target)
                    order.append(target)
        return False

    return frozenset(
        entry
        for entry in entries
        if not is_test(entry) and not tpu_script(modules[entry]) and program_trains(entry)
    )
