"""Once-per-training-script advice counts once per run (the advice family's RunFold).

advice.task_queue, advice.binary_kernels and advice.cpu_affinity are given on each training
script (training_scripts.py): how to launch it. A project of many entry scripts (trl: 57 example
and CLI scripts) would get the same three rows 57 times. Once every file's rows exist (after the
merge of ``--shard`` parts), the rows of one of these advices in ``FOLD_FROM`` or more files
become one, in the first file (by path): its API names how many training scripts it stands for
and the first few (``path:line``: the ``__main__`` guard, or the module-level code of a script
without one); the run's log (msFmkTranspltlog.txt) lists every
``path:line``. One or two scripts keep their rows."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable

from ms_fmk_transplt.engine.rules.advice.advice_rows import ADVICE_RULES
from ms_fmk_transplt.engine.rules.advice.training_scripts import GUARD_API
from ms_fmk_transplt.engine.rules.family_spec import RunFolding, fold_across_files, place
from ms_fmk_transplt.events import Notice

# the advices of the ``training_entry`` pattern of rules/advice.json
SCRIPT_ADVICE = frozenset(
    rule
    for rule in ADVICE_RULES
    if rule.partition(".")[2] in ("task_queue", "binary_kernels", "cpu_affinity")
)
FOLD_FROM = 3
NAMED = 3


def fold_script_advice(
    files: list[list[Notice]], run: RunFolding | None = None
) -> tuple[list[list[Notice]], list[str]]:
    """Each file's rows (in the run's order) with each once-per-script advice given in
    FOLD_FROM or more files folded into one row, and the log lines listing its scripts (at
    the lines the rows show: the migrated files' unless ``run`` says otherwise)."""
    migrated = run is None or run.migrated

    def key_of(row: Notice) -> tuple[str, str] | None:
        if row.advice and row.rule in SCRIPT_ADVICE:
            return (row.rule, row.tip)  # (its message names its place: not a key)
        return None

    def logged(key: Hashable, group: list[Notice]) -> str:
        return f"[{group[0].rule}] one advice row for the {len(group)} training scripts"

    def folded_row(key: Hashable, group: list[Notice]) -> Notice:
        named = ", ".join(place(row, migrated) for row in group[:NAMED])
        more = f" and {len(group) - NAMED} more" if len(group) > NAMED else ""
        guards = sum(row.api == GUARD_API for row in group)
        where = 'if __name__ == "__main__"' if guards else "module-level code"
        if 0 < guards < len(group):
            where += " or module-level code"
        api = (
            f"{where} of {len(group)} training scripts ({named}{more}; all in msFmkTranspltlog.txt)"
        )
        return dataclasses.replace(group[0], api=api)

    return fold_across_files(files, key_of, folded_row, logged, migrated, FOLD_FROM)
