"""A library whose action is in the library itself counts once per run (rule
``libraries.cuda_only``, the family's RunFold).

Most library rows ask something of the file (flash_attn called in ten files: each call must
change). An entry marked ``per_run`` in rules/libraries.json does not: the library picks CUDA in
its own code (coqui's trainer: ``use_cuda = torch.cuda.is_available()``; basicsr's models and
training pipeline), so the one thing to do is to patch, fork or configure the library, once. A
project of many recipes (coqui TTS: 54 recipes build ``TrainerArgs``) would get the same row in
each, and the rate would be driven by repetition. Once every file's rows exist (after the merge
of ``--shard`` parts), the ``manual`` rows of such entries of one library in ``FOLD_FROM`` or more
files become one: in the first file (by path), its tip saying how many files use the library
and naming the first few (``path:line``, in the numbering the rows are shown in); the run's log
(msFmkTranspltlog.txt) lists every ``path:line``. One or two files keep their rows; so do the
caveats of a use the run's options choose (``if args.trainer == ...``: leaving it off is the
file's), and every other library row.

A recipe setting is folded the same way: the rows library_configs.py makes for the recipe files
of the input (``optim: adamw_bnb_8bit`` in 105 axolotl example YAMLs, torchtune's
``_component_: bitsandbytes.optim.PagedAdamW`` in 14 recipes) are one row per setting when three
or more recipe files hold it, as launch settings are (unsupported/launch_folds.py).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Hashable
from pathlib import PurePosixPath

from ms_fmk_transplt.engine.rules.family_spec import RunFolding, fold_across_files, place
from ms_fmk_transplt.engine.rules.libraries.library_configs import CONFIG_SUFFIXES
from ms_fmk_transplt.engine.rules.libraries.library_rows import CUDA_ONLY, THIRD_PARTY
from ms_fmk_transplt.events import Notice
from ms_fmk_transplt.tables.library_table import LibraryTable

FOLD_FROM = 3  # a library used by one or two files keeps their rows
NAMED = 3  # files named in the folded row's tip
DEPS_MARK = "; --deps: "  # where the deps family's path joins a library row's tip


def _per_run_library(row: Notice, table: LibraryTable) -> str | None:
    """The library of a file's manual row about entries marked ``per_run``, or None."""
    if row.rule != CUDA_ONLY or row.category != THIRD_PARTY or row.action != "manual":
        return None
    library = table.library_of(row.api)
    return library.name if library is not None and table.per_run(row.api) else None


def fold_library_runs(
    files: list[list[Notice]], run: RunFolding
) -> tuple[list[list[Notice]], list[str]]:
    """Each file's rows (in the run's order) with the per_run rows of a library in FOLD_FROM or
    more files folded into one, and the log lines listing the files of each folded row."""
    table = run.tables.unsupported.libraries

    def key_of(row: Notice) -> str | None:
        return _per_run_library(row, table)

    def logged(name: Hashable, group: list[Notice]) -> str:
        return (
            f"[{CUDA_ONLY}] {name}: one row for the {len(group)} files that use it (the "
            "action is in the library)"
        )

    def folded_row(name: Hashable, group: list[Notice]) -> Notice:
        return _folded(str(name), group, table, run.migrated)

    files, lines = fold_across_files(files, key_of, folded_row, logged, run.migrated, FOLD_FROM)
    files, more = fold_across_files(
        files, _recipe_setting, _recipe_row, _recipe_logged, run.migrated, FOLD_FROM
    )
    return files, lines + more


_LINES = re.compile(r"\blines? \d+(?:, \d+)*(?: and \d+ more)?: ")


def _recipe_setting(row: Notice) -> tuple[str, str, str] | None:
    """A recipe file's library row (library_configs.py): its setting, action and tip without
    the lines it lists, or None."""
    if row.category != THIRD_PARTY or PurePosixPath(row.file).suffix not in CONFIG_SUFFIXES:
        return None
    return (row.api, row.action, _LINES.sub("", row.tip))


def _recipe_logged(key: Hashable, group: list[Notice]) -> str:
    return (
        f"[{group[0].rule}] {group[0].api}: one row for the {len(group)} recipe files that set it"
    )


def _recipe_row(key: Hashable, group: list[Notice]) -> Notice:
    named = ", ".join(place(row, True) for row in group[:NAMED])
    more = f" and {len(group) - NAMED} more" if len(group) > NAMED else ""
    where = f"{len(group)} recipe files set it ({named}{more}; all in msFmkTranspltlog.txt)"
    first = group[0]
    return dataclasses.replace(
        first, message=f"{where}: one row; {first.message}", tip=f"{where}: {first.tip}"
    )


def _folded(name: str, group: list[Notice], table: LibraryTable, migrated: bool) -> Notice:
    """The run's row: the first file's, its tip the entries' own (each once), saying how many
    files use the library and naming the first few."""
    named = ", ".join(place(row, migrated) for row in group[:NAMED])
    more = f" and {len(group) - NAMED} more" if len(group) > NAMED else ""
    where = f"{len(group)} files use {name} ({named}{more}; all in msFmkTranspltlog.txt)"
    entries = (table.entry(row.api) for row in group)
    tips = dict.fromkeys(entry["tip"] for entry in entries if entry is not None)
    first = group[0]
    # the paths --deps found in the library for the files' calls (the deps family's rows,
    # folded into these): each once, the first few
    paths: dict[str, str] = {}  # the path (without the file's lines) -> the first row's text
    for row in group:
        if DEPS_MARK in row.tip:
            text = row.tip.split(DEPS_MARK, 1)[1]
            paths.setdefault(text[text.find(" -> ") :] if " -> " in text else text, text)
    found = "".join(f"{DEPS_MARK}{p}" for p in list(paths.values())[:NAMED])
    return dataclasses.replace(
        first,
        message=f"{where}: one row for the run, the action is in the library; {first.message}",
        tip=f"{where}; the action is in the library, not in each file: " + " | ".join(tips) + found,
    )
