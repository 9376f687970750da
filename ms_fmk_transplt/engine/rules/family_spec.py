"""What a rule family declares about itself: ``FAMILY = Family(...)`` in its folder's
``__init__.py`` (engine/rules/<name>/). The core never imports a family: it asks
engine/rules/registry.py, which collects these declarations in order and calls their hooks.

Stages (where the family acts on a file):

* ``gate``: before any pass (opt-out comments, size and depth limits, files Python cannot read);
* ``before``: the LibCST stage of ``-r``, on the file as written (engine/stages.py);
* ``span``: the span pass (engine/spans/), the one implementation of the built-in rules: its
  ``concerns`` act on each node in the order of the registry;
* ``after``: the LibCST stages of ``-sim`` and ``distributed -m``, over the span pass's output;
* ``scan``: what the target version says of the code (engine/target_scan.py);
* ``run``: the run itself (a file the engine failed on, a statement it left as written).

Hooks (each optional; the registry calls them in family order):

* ``anchor_words(ctx)``: words that anchor a statement for the span pass beyond the tables'
  (after ``file_facts``, so a TensorFlow file's words can depend on its imports);
* ``file_facts(ctx, facts, source, trees)``: what the family must know of the whole file before
  its statements are walked (the tf family: whether and how the file uses TensorFlow);
* ``finish(ctx, facts, done)``: once every statement is walked (helper lines, rows about the
  whole file, inserted imports); in the registry's FINISHING order;
* ``fold(notices, done)``: how the family's rows fold once the file is finished (one row per file
  and library, per API, ...); it reads and changes only the file's open work and the family's
  own rows: the registry asks it only when the rows hold either (a file whose rows are advice
  and notes of other families loads no family to fold them, tests/test_family_folds.py);
* ``run_fold(files, run)``: how the family's rows fold across the files of the run, once every
  file's rows exist (after the merge of ``--shard`` parts): each file's rows in the run's order,
  and the log lines naming what a folded row stands for (a launch setting in 196 recipe
  YAMLs: one row; a library whose action is in the library itself, used by 54 recipes: one
  row); ``run`` holds the run's tables and the numbering its rows are shown in;
* ``cst_stage(code, tables, options)``: the LibCST concerns the family runs on this file
  (``before`` / ``after`` families; imported only when they run: LibCST stays unloaded);
* ``open_work_rule(api, entry, libraries)``: the rule of an open-work row a concern records
  without naming one (the unsupported family's: by the table's category, a library's use).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ms_fmk_transplt.events import Notice

if TYPE_CHECKING:
    import ast

    from ms_fmk_transplt.engine.base import Concern
    from ms_fmk_transplt.engine.options import EngineOptions
    from ms_fmk_transplt.engine.spans.module_facts import ModuleFacts
    from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
    from ms_fmk_transplt.engine.spans.span_context import SpanContext
    from ms_fmk_transplt.safety.chunks import Piece
    from ms_fmk_transplt.tables import Tables
    from ms_fmk_transplt.tables.library_table import LibraryTable
    from ms_fmk_transplt.tables.unsupported_table import Entry

    AnchorWords = Callable[[SpanContext], tuple[str, ...]]
    FileFacts = Callable[[SpanContext, ModuleFacts, bytes, list[tuple[Piece, ast.Module]]], None]
    FinishStep = Callable[[SpanContext, ModuleFacts, "Finishing"], None]
    RowFold = Callable[[list[Notice], "Folding"], list[Notice]]
    RunFold = Callable[[list[list[Notice]], "RunFolding"], tuple[list[list[Notice]], list[str]]]
    CstStage = Callable[[bytes, Tables, EngineOptions], tuple[type[Concern], ...]]
    OpenWorkRule = Callable[[str, Entry, LibraryTable], str]


@dataclass(frozen=True)
class Finishing:
    """What a finishing step may need beyond the file's context."""

    source: bytes  # the file's text (decoded)
    insert_imports: bool  # the span pass inserts ``import torch_npu`` (no later stage does)
    torch_npu_named: bool  # an earlier stage (-r) made the file name torch_npu


@dataclass(frozen=True)
class Folding:
    """What a row fold may need: the file, the run's tables and options."""

    source: bytes
    tables: Tables
    options: EngineOptions
    migrated: bool  # rows name the migrated file's lines (not --analyse's input lines)


@dataclass(frozen=True)
class RunFolding:
    """What a fold across the run's files may need: the run's tables and options."""

    tables: Tables
    migrated: bool  # rows name the migrated files' lines (not --analyse's input lines)


def fold_across_files(
    files: list[list[Notice]],
    key_of: Callable[[Notice], Hashable | None],
    folded_row: Callable[[Hashable, list[Notice]], Notice],
    logged: Callable[[Hashable, list[Notice]], str],
    migrated: bool,
    fold_from: int = 3,
) -> tuple[list[list[Notice]], list[str]]:
    """The helper of a ``run_fold``: the rows of one key (``key_of``; None: not folded) in
    ``fold_from`` or more files become one, ``folded_row(key, group)`` in the first file (by
    path and line); each file's rows (the same list when none of them folds) and the log
    lines naming every ``path:line`` a folded row stands for, after ``logged(key, group)``."""
    groups: dict[Hashable, list[Notice]] = {}
    for rows in files:
        for row in rows:
            key = key_of(row)
            if key is not None:
                groups.setdefault(key, []).append(row)
    folded: dict[int, Notice | None] = {}  # id(row) -> its folded row, None: dropped
    lines: list[str] = []
    for key, group in groups.items():
        if len({row.file for row in group}) < fold_from:
            continue
        group.sort(key=lambda row: (row.file, row.lines(migrated)))
        folded.update((id(row), None) for row in group[1:])
        folded[id(group[0])] = folded_row(key, group)
        places = ", ".join(place(row, migrated) for row in group)
        lines.append(f"{place(group[0], migrated)}: {logged(key, group)}: {places}")
    if not folded:
        return files, []
    return [_refolded(rows, folded) for rows in files], lines


def place(row: Notice, migrated: bool) -> str:
    """``path:line`` of a row, in the numbering it is shown in."""
    return f"{row.file}:{row.lines(migrated)[0]}"


def _refolded(rows: list[Notice], folded: dict[int, Notice | None]) -> list[Notice]:
    if not any(id(row) in folded for row in rows):
        return rows
    out = (folded.get(id(row), row) for row in rows)
    return [row for row in out if row is not None]


@dataclass(frozen=True)
class Family:
    name: str  # the id prefix; the folder engine/rules/<name>/
    stage: str  # gate, before, span, after, scan or run (see above)
    modules: tuple[str, ...]  # its modules in engine/rules/<name>/, declaring modules first
    data: tuple[str, ...] = ()  # what it reads: rules/<file>[#<top-level key>]
    concerns: tuple[type[SpanConcern], ...] = ()  # span stage: its concerns, in order
    option: str = ""  # the option that turns it on ("": always on)
    framework: str = "pytorch"  # "tensorflow": its concerns run on TensorFlow files only
    anchor_words: AnchorWords | None = None
    file_facts: FileFacts | None = None
    finish: FinishStep | None = None
    fold: RowFold | None = None
    run_fold: RunFold | None = None
    cst_stage: CstStage | None = None
    open_work_rule: OpenWorkRule | None = None


# where families read their data (Family.data)
INTERFACE = "rules/interface_table.json"
UNSUPPORTED = "rules/unsupported_api.json"
ADVICE = "rules/advice.json"
SIMILAR = "rules/similar_api.json"
LIBRARIES = "rules/libraries.json"
USER_RULES = "rules/user_rules.schema.json"
TF_MIGRATION = "rules/tf_migration.json"
TF_ADAPTER = "rules/tf_adapter.json"
DEPS = "rules/deps_analysis.json"
