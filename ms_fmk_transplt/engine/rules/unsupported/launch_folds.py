"""A launch setting counts once per run (rule unsupported.launch_config, the family's RunFold).

A launch script or config file that passes cuda / nccl values is one row (launch_values.
file_notice). A project of many recipes sets the same thing in each (torchtune: ``device: cuda``
in 196 recipe YAMLs, gpt-neox: ``distributed_backend: nccl`` in every configs/*.yml): 196 rows
saying the same thing would drive the run's counts. Once every file's rows exist (after the
merge of ``--shard`` parts), the rows of the same setting in ``FOLD_FROM`` or more config files
become one: in the first file (by path), its tip saying how many files set it and naming the
first few (``path:line``); the run's log (msFmkTranspltlog.txt) lists every ``path:line``. A
setting is the row's whole text without its line numbers (``device: cuda``,
``NCCL_CUMEM_ENABLE=``, ``distributed_backend: nccl, CUDA_VISIBLE_DEVICES=``); a row whose
settings are not all shown (``... and 2 more``) is left in its file.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Hashable
from pathlib import PurePosixPath

from ms_fmk_transplt.engine.rules.family_spec import RunFolding, fold_across_files, place
from ms_fmk_transplt.engine.rules.unsupported.launch_values import LAUNCH_SUFFIXES
from ms_fmk_transplt.engine.rules.unsupported.unsupported_rows import CATEGORY_RULES
from ms_fmk_transplt.events import Notice

LAUNCH_CONFIG = CATEGORY_RULES["launch_config"]
FOLD_FROM = 3  # a setting in one or two files keeps its rows
NAMED = 3  # files named in the folded row's tip
_LINE = re.compile(r" \(line \d+\)")
_MORE = re.compile(r" and \d+ more$")

# (setting, action, tip) of a row
Key = tuple[str, str, str]


def _setting(row: Notice) -> str | None:
    """The setting of a launch file's row (its text without line numbers), or None when the
    row is not one or does not show all it found."""
    if row.rule != LAUNCH_CONFIG or PurePosixPath(row.file).suffix not in LAUNCH_SUFFIXES:
        return None
    if _MORE.search(row.api):
        return None
    return _LINE.sub("", row.api)


def fold_launch_rows(
    files: list[list[Notice]], run: RunFolding | None = None
) -> tuple[list[list[Notice]], list[str]]:
    """Each file's rows (in the run's order) with the rows of a setting in FOLD_FROM or more
    launch files folded into one, and the log lines listing the files of each folded row
    (``run`` is not needed: a setting is compared by its text)."""

    def key_of(row: Notice) -> Key | None:
        setting = _setting(row)
        return None if setting is None else (setting, row.action, row.tip)

    def logged(key: Hashable, group: list[Notice]) -> str:
        setting = str(key[0]) if isinstance(key, tuple) else ""
        return (
            f"[{LAUNCH_CONFIG}] {setting}: one row for the {len(group)} launch / config files "
            "that set it"
        )

    def folded_row(key: Hashable, group: list[Notice]) -> Notice:
        return _folded(str(key[0]) if isinstance(key, tuple) else "", group)

    return fold_across_files(files, key_of, folded_row, logged, True, FOLD_FROM)


def _place(row: Notice) -> str:
    return place(row, True)  # (a launch file is copied as it is: one numbering)


def _folded(setting: str, rows: list[Notice]) -> Notice:
    named = ", ".join(_place(row) for row in rows[:NAMED])
    more = f" and {len(rows) - NAMED} more" if len(rows) > NAMED else ""
    listed = f"{named}{more}; all in msFmkTranspltlog.txt"
    where = f"{len(rows)} launch / config files set {setting} ({listed})"
    first = rows[0]
    return dataclasses.replace(
        first,
        message=f"{where}: one row; {first.message}",
        tip=f"{where}: {first.tip}",
    )
