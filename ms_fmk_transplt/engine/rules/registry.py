"""The rule families, in order, and the one door between them and the core.

A family lives in ``engine/rules/<name>/`` and declares itself there (``FAMILY = Family(...)``
in its ``__init__.py``, engine/rules/family_spec.py says what it holds): its rule ids (by
``declare(...)`` in its modules), its code, the data it reads in ``rules/``, its anchor words,
its finishing steps, how its rows fold and its LibCST stage. The same name prefixes its golden
fixtures (``fixtures/rules/<name>.<rule>/``) and its pages (``docs/rules/<name>.<rule>.md``).

No module outside ``engine/rules/`` imports a family (tests/test_architecture.py): the core
calls the hooks collected here, in family order, and the few functions and rule ids of a family
that the core's own machinery needs (the gates, the opt-out comments, the rows of a file the
engine could not read, ``import torch_npu`` after the LibCST stages) are named once each in
engine/rules/family_exports.py. How the core treats a rule's rows is said
by its declaration (``bookkeeping``, ``fixed``, ``answers``: rule_catalog.Rule), never by its
name. Families are imported on first use (``families()``), so importing this module is cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator
from functools import cache
from typing import TYPE_CHECKING

from ms_fmk_transplt.catalogue.rule_catalog import RULES
from ms_fmk_transplt.engine.rules.family_spec import Family, Finishing, Folding, RunFolding

if TYPE_CHECKING:
    import ast

    from ms_fmk_transplt.engine.base import Concern
    from ms_fmk_transplt.engine.options import EngineOptions
    from ms_fmk_transplt.engine.spans.module_facts import ModuleFacts
    from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
    from ms_fmk_transplt.engine.spans.span_context import SpanContext
    from ms_fmk_transplt.events import Notice
    from ms_fmk_transplt.safety.chunks import Piece
    from ms_fmk_transplt.tables import Tables
    from ms_fmk_transplt.tables.library_table import LibraryTable
    from ms_fmk_transplt.tables.unsupported_table import Entry

__all__ = ["Family", "Finishing", "Folding", "RunFolding"]

PACKAGE = "ms_fmk_transplt.engine.rules"
# the families, in order: the span pass runs their concerns on each node in this order
NAMES = (
    "parse",
    "optout",
    "user_rules",
    "amp",
    "cuda_only",
    "device_api",
    "specify_device",
    "tensor_methods",
    "device_strings",
    "expected_errors",
    "distributed",
    "profiler",
    "environment",
    "unsupported",
    "libraries",
    "deps",
    "assess",
    "tf",
    "imports",
    "similar",
    "distributed_mode",
    "kit",
    "todo",
    "advice",
    "operator_support",
    "engine",
)
# the order of the span pass's finishing steps: rows about the whole file first, then the
# inserted lines (``import torch_npu`` before a TensorFlow file's adapter lines)
FINISHING = ("assess", "specify_device", "unsupported", "imports", "tf")


@cache
def families() -> tuple[Family, ...]:
    """Every family's declaration, in order (importing a family declares its rule ids)."""
    out = []
    for name in NAMES:
        family = importlib.import_module(f"{PACKAGE}.{name}").FAMILY
        if not isinstance(family, Family) or family.name != name:
            raise TypeError(f"{PACKAGE}.{name}: FAMILY must be its Family declaration")
        out.append(family)
    return tuple(out)


@cache
def by_name() -> dict[str, Family]:
    return {family.name: family for family in families()}


def family_of(module: str) -> str:
    """The family of a module of engine/rules/<family>/ (by its dotted name)."""
    return module.split(".")[3]


def family_modules() -> list[str]:
    """Every module of every family (importing them declares every rule id)."""
    return [f"{PACKAGE}.{f.name}.{module}" for f in families() for module in f.modules]


def declare_all() -> None:
    """Import every family module: every rule id is then in rule_catalog.RULES."""
    for family in families():
        _import_modules(family)


def _import_modules(family: Family) -> None:
    for module in family.modules:
        importlib.import_module(f"{PACKAGE}.{family.name}.{module}")


def declared(rule_ids: Iterable[str]) -> None:
    """Make sure these ids are declared (rule_catalog.RULES: what the core reads of a rule's
    declaration), importing the modules of the families of those that are not yet: a warm run
    whose files all come from the cache runs no family code."""
    unknown = {rule_id.split(".")[0] for rule_id in rule_ids if rule_id not in RULES}
    if not unknown:
        return
    named = by_name()
    for prefix in sorted(unknown & set(named)):
        _import_modules(named[prefix])


# -- the span pass ------------------------------------------------------------------------


@cache
def span_concerns(
    specify_device: bool, tensorflow: bool = False, pytorch: bool = True, deps: bool = False
) -> tuple[type[SpanConcern], ...]:
    """The span pass's concerns, in order (-s's only with it; the tensorflow families' only
    for a file that imports TensorFlow, the pytorch ones not for a file that imports TensorFlow
    and no torch: its ``"nccl"`` or ``CUDA_VISIBLE_DEVICES`` are TensorFlow's; ``--deps``'s on
    every file: a file that imports only an analysed library calls it)."""
    return tuple(
        concern
        for family in families()
        if family.stage == "span"
        and (family.option != "-s" or specify_device)
        and (family.option != "--deps" or deps)
        and (
            deps
            if family.option == "--deps"
            else (tensorflow if family.framework == "tensorflow" else pytorch)
        )
        for concern in family.concerns
    )


def read_file_facts(
    ctx: SpanContext, facts: ModuleFacts, source: bytes, trees: list[tuple[Piece, ast.Module]]
) -> None:
    """What each family must know of the whole file before its statements are walked."""
    for family in families():
        if family.file_facts is not None:
            family.file_facts(ctx, facts, source, trees)


def anchor_words(ctx: SpanContext) -> tuple[str, ...]:
    """The families' own anchor words for this file (beyond the tables')."""
    return tuple(w for f in families() if f.anchor_words is not None for w in f.anchor_words(ctx))


def finish_file(ctx: SpanContext, facts: ModuleFacts, done: Finishing) -> None:
    """The finishing steps, in FINISHING order, once every statement is walked."""
    named = by_name()
    for name in FINISHING:
        step = named[name].finish
        if step is not None:
            step(ctx, facts, done)


def fold_rows(notices: list[Notice], done: Folding) -> list[Notice]:
    """The file's rows, each family's folded as it says, in family order."""
    for family in families():
        if family.fold is not None:
            notices = family.fold(notices, done)
    return notices


def fold_run_rows(
    files: list[list[Notice]], run: RunFolding
) -> tuple[list[list[Notice]], list[str]]:
    """Each file's rows (in the run's order) folded across files as each family says
    (Family.run_fold), in family order, and the log lines naming what the folded rows stand
    for."""
    lines: list[str] = []
    for family in families():
        if family.run_fold is not None:
            files, more = family.run_fold(files, run)
            lines.extend(more)
    return files, lines


def open_work_rule(api: str, entry: Entry, libraries: LibraryTable) -> str:
    """The rule of an open-work row recorded without one (Family.open_work_rule)."""
    for family in families():
        if family.open_work_rule is not None:
            return family.open_work_rule(api, entry, libraries)
    raise LookupError("no family names the rule of an open-work row")


# -- the LibCST stages ----------------------------------------------------------------------


def cst_stages(
    code: bytes, tables: Tables, options: EngineOptions
) -> tuple[tuple[type[Concern], ...], tuple[type[Concern], ...]]:
    """The LibCST concerns that act on ``code``: before the span pass (-r) and after it
    (-sim, distributed -m, a kit), in family order. The precision kit's GPU side
    (``kit_only``) runs the kit's alone."""
    before: list[type[Concern]] = []
    after: list[type[Concern]] = []
    for family in _cst_families(options):
        stage = family.cst_stage
        if stage is not None:
            (before if family.stage == "before" else after).extend(stage(code, tables, options))
    return tuple(before), tuple(after)


def _cst_families(options: EngineOptions) -> Iterator[Family]:
    for family in families():
        if not options.kit_only or family.option == "kit":
            yield family


def stage_options(concerns: tuple[type[Concern], ...]) -> list[str]:
    """The options of the families whose LibCST concerns these are, in order."""
    named = by_name()
    return [named[f].option for f in stage_families(concerns)]


def stage_families(concerns: tuple[type[Concern], ...]) -> list[str]:
    """The families of these LibCST concerns, in order."""
    return list(dict.fromkeys(family_of(c.__module__) for c in concerns))
