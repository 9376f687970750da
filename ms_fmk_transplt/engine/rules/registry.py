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
name. Families are imported on first use, so importing this module is cheap; a family of GATES
is imported only once a file holds one of its words or the run gives it the file (``meet``):
the TensorFlow family is never loaded by a run or a ``--check`` of PyTorch files alone, nor
the family of an option (``-s``, ``--deps``, ``--assessed``) by a run without it.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING

from ms_fmk_transplt.catalogue.rule_catalog import RULES
from ms_fmk_transplt.engine.rules.family_spec import Family, Finishing, Folding, RunFolding

if TYPE_CHECKING:
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


@dataclass(frozen=True)
class Gate:
    """When a family is loaded: once a file holds one of its ``words`` (in its bytes, or in the
    names its import statements give, as Python normalises them), or ``wanted(path, options)``
    says the run gives it the file without them. Until then no module of the family is imported
    and none of its hooks is called; once loaded, it meets every later file as the other
    families do (its hooks leave a file that is not its own as it is)."""

    words: Callable[[Tables], tuple[bytes, ...]]
    wanted: Callable[[str, EngineOptions], bool]


def _tensorflow_words(tables: Tables) -> tuple[bytes, ...]:
    """What a file importing TensorFlow names (tf_files.tf_file: an import root of the table,
    one of Horovod's TensorFlow front ends)."""
    table = tables.tf_migration
    roots = {*table.import_roots, *(path.split(".")[0] for path in table.horovod_modules)}
    return tuple(sorted(root.encode() for root in roots))


def _tensorflow_program(path: str, options: EngineOptions) -> bool:
    """A cell of a TensorFlow notebook, the entry of a TF 2.x program (the NPU device is opened
    there): the tf family's files whatever they import (tf_files.tf_file)."""
    project = options.project
    entry = project is not None and path in project.programs.tf2_entries
    return bool(options.tf_notebook_style) or entry


def _no_words(tables: Tables) -> tuple[bytes, ...]:
    """The family of an option holds no words: the option alone gives it the files."""
    return ()


def _specify_device(path: str, options: EngineOptions) -> bool:
    return options.specify_device  # -s (its concerns, anchor words and helper line)


def _deps_analysed(path: str, options: EngineOptions) -> bool:
    return options.project is not None and options.project.deps is not None  # --deps


def _assessed(path: str, options: EngineOptions) -> bool:
    return options.project is not None and options.project.assessed is not None  # --assessed


# each family whose hooks leave every file as it is unless a file is its own: TensorFlow's,
# and those of an option the run does not give (tests/test_family_gates.py)
GATES = {
    "specify_device": Gate(_no_words, _specify_device),
    "deps": Gate(_no_words, _deps_analysed),
    "assess": Gate(_no_words, _assessed),
    "tf": Gate(_tensorflow_words, _tensorflow_program),
}
_LOADED: dict[str, Family] = {}


def _family(name: str) -> Family:
    """The family's declaration, its package imported on first use."""
    family = _LOADED.get(name)
    if family is None:
        family = importlib.import_module(f"{PACKAGE}.{name}").FAMILY
        if not isinstance(family, Family) or family.name != name:
            raise TypeError(f"{PACKAGE}.{name}: FAMILY must be its Family declaration")
        _LOADED[name] = family
    return family


def families() -> tuple[Family, ...]:
    """Every family's declaration, in order (importing a family declares its rule ids)."""
    return tuple(_family(name) for name in NAMES)


def by_name() -> dict[str, Family]:
    return {family.name: family for family in families()}


def _met() -> tuple[Family, ...]:
    """The families that meet files so far, in order: every family but a gated one no file
    has held the words of."""
    return _meeting(_gated())


def _gated() -> tuple[str, ...]:
    """The gated families loaded so far."""
    return tuple(name for name in GATES if name in _LOADED)


@cache
def _meeting(gated: tuple[str, ...]) -> tuple[Family, ...]:
    return tuple(_family(name) for name in NAMES if name not in GATES or name in gated)


def meet(
    source: bytes,
    path: str,
    options: EngineOptions,
    tables: Tables,
    imports: list[ast.Import | ast.ImportFrom],
) -> None:
    """Load each gated family this file is for (Gate), before its facts are read."""
    for name, gate in GATES.items():
        if name in _LOADED:
            continue
        words = _words(gate, tables)
        held = any(word in source for word in words)
        if words and not held and not source.isascii():  # ``import ｔｅｎｓｏｒｆｌｏｗ`` (NFKC)
            named = _import_names(imports)
            held = any(word in named for word in words)
        if held or gate.wanted(path, options):
            _family(name)


@lru_cache(maxsize=16)
def _words(gate: Gate, tables: Tables) -> tuple[bytes, ...]:
    return gate.words(tables)


def _import_names(imports: list[ast.Import | ast.ImportFrom]) -> bytes:
    names = [alias.name for node in imports for alias in node.names]
    names += [node.module for node in imports if isinstance(node, ast.ImportFrom) and node.module]
    return " ".join(names).encode("utf-8", "surrogatepass")


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
    for prefix in sorted(unknown & set(NAMES)):
        _import_modules(_family(prefix))


# -- the span pass ------------------------------------------------------------------------


def span_concerns(
    specify_device: bool, tensorflow: bool = False, pytorch: bool = True, deps: bool = False
) -> tuple[type[SpanConcern], ...]:
    """The span pass's concerns, in order (-s's only with it; the tensorflow families' only
    for a file that imports TensorFlow, the pytorch ones not for a file that imports TensorFlow
    and no torch: its ``"nccl"`` or ``CUDA_VISIBLE_DEVICES`` are TensorFlow's; ``--deps``'s on
    every file: a file that imports only an analysed library calls it); of the families
    loaded (a gated one once a file held its words)."""
    return _span_concerns(_gated(), specify_device, tensorflow, pytorch, deps)


@cache
def _span_concerns(
    gated: tuple[str, ...], specify_device: bool, tensorflow: bool, pytorch: bool, deps: bool
) -> tuple[type[SpanConcern], ...]:
    return tuple(
        concern
        for family in _meeting(gated)
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
    """What each family must know of the whole file before its statements are walked (the
    gated families it holds the words of loaded first)."""
    meet(source, ctx.path, ctx.options, ctx.tables, facts.imports)
    for family in _met():
        if family.file_facts is not None:
            family.file_facts(ctx, facts, source, trees)


def anchor_words(ctx: SpanContext) -> tuple[str, ...]:
    """The families' own anchor words for this file (beyond the tables')."""
    return tuple(w for f in _met() if f.anchor_words is not None for w in f.anchor_words(ctx))


def finish_file(ctx: SpanContext, facts: ModuleFacts, done: Finishing) -> None:
    """The finishing steps, in FINISHING order, once every statement is walked."""
    named = {family.name: family for family in _met()}
    for name in FINISHING:
        step = named[name].finish if name in named else None
        if step is not None:
            step(ctx, facts, done)


def fold_rows(notices: list[Notice], done: Folding) -> list[Notice]:
    """The file's rows, each family's folded as it says, in family order (a gated family not
    loaded has no rows). A fold reads only the file's open work and its family's own rows
    (Family.fold): a family is asked only when the rows hold either, so the advice rows of a
    file no pass walked load no other family (tests/test_family_folds.py)."""
    gated = _gated()
    seen: list[Notice] | None = None
    held: tuple[bool, frozenset[str]] = (False, frozenset())
    for name in NAMES:
        if name in GATES and name not in gated:
            continue
        if seen is not notices:
            seen, held = notices, _row_families(notices)
        if not held[0] and name not in held[1]:
            continue
        family = _family(name)
        if family.fold is not None:
            notices = family.fold(notices, done)
    return notices


def _row_families(notices: list[Notice]) -> tuple[bool, frozenset[str]]:
    """Whether a row is open work, and if none is, the families of the rows' rules (an id's
    prefix is its family)."""
    if any(n.open_work for n in notices):
        return True, frozenset()
    return False, frozenset(n.rule.split(".", 1)[0] for n in notices)


def fold_run_rows(
    files: list[list[Notice]], run: RunFolding
) -> tuple[list[list[Notice]], list[str]]:
    """Each file's rows (in the run's order) folded across files as each family says
    (Family.run_fold), in family order, and the log lines naming what the folded rows stand
    for."""
    lines: list[str] = []
    for family in _met():
        if family.run_fold is not None:
            files, more = family.run_fold(files, run)
            lines.extend(more)
    return files, lines


def open_work_rule(api: str, entry: Entry, libraries: LibraryTable) -> str:
    """The rule of an open-work row recorded without one (Family.open_work_rule)."""
    for family in _met():
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
    for family in _met():
        if not options.kit_only or family.option == "kit":
            yield family


def stage_options(concerns: tuple[type[Concern], ...]) -> list[str]:
    """The options of the families whose LibCST concerns these are, in order."""
    return [_family(f).option for f in stage_families(concerns)]


def stage_families(concerns: tuple[type[Concern], ...]) -> list[str]:
    """The families of these LibCST concerns, in order."""
    return list(dict.fromkeys(family_of(c.__module__) for c in concerns))
