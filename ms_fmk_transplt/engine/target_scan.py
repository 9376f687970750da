"""What the target torch_npu (-v) makes of code the migration leaves as it is: operator-support
rows (rules operator_support.*, engine/rules/operator_support/operator_rows.py) and advice rows
(advice.*, engine/rules/advice/advice_rows.py).

Nothing is rewritten, so one scan serves both passes: the stdlib tree of the file, names
resolved through imports and scopes as the passes resolve them (engine/scopes.py). Only the
statements holding a trigger word (the last part of a listed API, a pattern's word, or a name an
import binds one to) are walked, so a file without any costs a regular-expression search.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left
from typing import Any

from ms_fmk_transplt.engine.cst_names import scoped_children
from ms_fmk_transplt.engine.program_facts import ProgramFacts
from ms_fmk_transplt.engine.rules.family_exports import (
    PATTERN_WORDS,
    AdviceFinder,
    operator_notice,
    training_script,
)
from ms_fmk_transplt.engine.scope_model import Scope, UnsupportedScope, chosen_name, full_name
from ms_fmk_transplt.engine.scopes import Scopes
from ms_fmk_transplt.engine.spans.anchors import lf_line_numbers, line_starts
from ms_fmk_transplt.engine.statements import tree_statements
from ms_fmk_transplt.engine.target_filter import (
    ATTRIBUTE,
    api_words,
    chain_start,
    encoded,
    identifier_at,
    may_concern_target,
    trigger_words,
    word_pattern,
)
from ms_fmk_transplt.engine.word_search import word_matches
from ms_fmk_transplt.events import Notice
from ms_fmk_transplt.safety.parse_bounds import TooDeep, check_parse_size
from ms_fmk_transplt.tables import Tables


def target_notices(
    source: bytes,
    path: str,
    tables: Tables,
    tree: ast.Module | None = None,
    answered: frozenset[tuple[int, str]] = frozenset(),
    programs: ProgramFacts | None = None,
) -> list[Notice] | None:
    """The rows of one file; None when it was not parsed (nothing to look for, or it does not
    parse: the passes report that). ``tree``: the span pass's tree of the same source;
    ``answered``: (line, advice id) pairs a change already acted on (no advice row there);
    ``programs``: the run's program model (None: none, one file at a time)."""
    if not may_concern_target(source, tables):
        # (a training script whose program trains through the modules it imports)
        if programs is None or not training_script(path, source, programs):
            return None
    if tree is None:
        try:
            check_parse_size(source)  # (a whole file: its memory is bounded as the pieces')
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError, TooDeep):
            return None
    scan = TargetScan(source, path, tables, tree, programs)
    try:
        return _scanned(scan, source, tables, tree, answered)
    finally:
        scan.release()


def _scanned(
    scan: TargetScan,
    source: bytes,
    tables: Tables,
    tree: ast.Module,
    answered: frozenset[tuple[int, str]],
) -> list[Notice]:
    scan.advice.answered = answered
    chains = _chain_roots(source, encoded(api_words(tables)), scan.imported)
    lines = _lines(source, scan.line_patterns(), chains)
    if not lines:
        return scan.finish()  # (a training script's row, placed without a walk)
    try:
        scan.run(lines, Scopes(tree, walrus=b":=" in source))
    except (UnsupportedScope, RecursionError):
        return []
    return scan.finish()


def _chain_roots(source: bytes, apis: frozenset[bytes], roots: frozenset[str]) -> list[int]:
    """Offsets of the roots of the dotted chains that end in a listed API's last part and
    start at an imported name (``F.interpolate``, ``torch.nn.functional.interpolate``)."""
    found = []
    for match in ATTRIBUTE.finditer(source):
        if match.group(1) in apis:
            start = chain_start(source, match.start())
            if start is not None and identifier_at(source, start).decode() in roots:
                found.append(start)
    return found


def _lines(
    source: bytes,
    patterns: list[tuple[re.Pattern[bytes], frozenset[str] | None]],
    offsets: list[int],
) -> list[int]:
    """The lines a match of one of the patterns, or one of ``offsets``, starts on (with
    roots: only matches whose group 1 is one of them). Lines as the stdlib parser counts them:
    a bare CR ends one too (engine/spans/anchors.py counts LF only, as the span pass never
    sees a bare CR)."""
    found_at = list(offsets)
    for pattern, roots in patterns:
        for match in word_matches(pattern, source):
            if roots is None or match.group(1).decode() in roots:
                found_at.append(match.start())
    if not found_at:
        return []
    if b"\r" in source:
        starts = line_starts(source)
        return sorted({bisect_left(starts, offset + 1) for offset in found_at})
    return lf_line_numbers(source, found_at)


class TargetScan:
    def __init__(
        self,
        source: bytes,
        path: str,
        tables: Tables,
        tree: ast.Module,
        programs: ProgramFacts | None = None,
    ) -> None:
        self.path = path
        self.tables = tables
        self.tree = tree
        self.scopes: Scopes | None = None
        self.words = trigger_words(tables)
        # names bound by an import anywhere: only a chain rooted in one can name a listed API;
        # aliases: `from torch import cdist as cd` binds a listed API's last part to `cd`
        self.imported, self.aliases = imported_names(tree, api_words(tables))
        self.advice = AdviceFinder(source, path, tables, tree, self.qname, programs)
        self.rows: dict[tuple[Any, ...], Notice] = {}
        self._lines: list[int] = []
        self._names: frozenset[str] | set[str] = self.words
        self._qnames: dict[int, str | None] = {}

    def line_patterns(self) -> list[tuple[re.Pattern[bytes], frozenset[str] | None]]:
        """Lines worth walking, besides the chains from an imported name to a listed API's last
        part (``F.interpolate``; _chain_roots): an imported API itself (``cdist`` after ``from
        torch import cdist``), or a pattern's word."""
        out: list[tuple[re.Pattern[bytes], frozenset[str] | None]] = []
        apis = api_words(self.tables)  # chains to them: _chain_roots
        bare = (self.imported & apis) | self.aliases
        if bare:
            out.append((word_pattern(frozenset(bare)), None))
        if self.tables.advice.by_pattern:
            out.append((word_pattern(PATTERN_WORDS), None))
        return out

    def run(self, lines: list[int], scopes: Scopes) -> None:
        self.scopes = scopes
        self._lines = lines
        self._names = self.words | self.aliases
        self._walk(self.tree, scopes.global_scope, None)

    def finish(self) -> list[Notice]:
        for notice in self.advice.finish():
            self.rows.setdefault(("advice", notice.rule, notice.api), notice)
        return sorted(self.rows.values(), key=lambda n: (n.line, n.end_line, n.rule, n.api))

    def release(self) -> None:
        """Breaks the reference cycles of the scan (its scopes; the advice finder holds
        ``self.qname``), so that the tree is freed without the cyclic garbage collector."""
        if self.scopes is not None:
            self.scopes.release()
        del self.advice

    # -- the walk: only nodes spanning a trigger line --------------------------------------
    def _spans_trigger(self, node: ast.AST) -> bool:
        start = getattr(node, "lineno", None)
        if start is None:
            return True
        end = getattr(node, "end_lineno", None) or start
        i = bisect_left(self._lines, start)
        return i < len(self._lines) and self._lines[i] <= end

    def _walk(
        self, node: ast.AST, scope: Scope, parent: ast.AST | None, typed: bool = False
    ) -> None:
        """``typed``: the node is inside a type annotation (a name there is no use of it)."""
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return  # LibCST gives names inside imports no scope: the passes report imports
        assert self.scopes is not None  # set by run()
        self.advice.visit(node, parent, scope)
        if isinstance(node, (ast.Name, ast.Attribute)):
            outermost = not (isinstance(parent, ast.Attribute) and parent.value is node)
            if outermost and self._leaf(node) in self._names and self._root_imported(node):
                self._name(node, scope, parent, typed)
        annotation = _annotation_of(node)
        for child, child_scope in scoped_children(node, scope, self.scopes):
            if self._spans_trigger(child):
                self._walk(child, child_scope, node, typed or child is annotation)

    def _root_imported(self, node: ast.AST) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.imported

    @staticmethod
    def _leaf(node: ast.Name | ast.Attribute) -> str:
        return node.id if isinstance(node, ast.Name) else node.attr

    def qname(self, node: ast.AST, scope: Scope) -> str | None:
        key = id(node)
        if key not in self._qnames:
            top = node if isinstance(node, ast.Attribute) else None
            assert self.scopes is not None  # set by run(), before the walk that asks
            names = self.scopes.qualified_names(node, scope, top)
            literal = isinstance(node, (ast.Name, ast.Attribute))
            self._qnames[key] = chosen_name(names, full_name(node) if literal else None)
        return self._qnames[key]

    def _name(
        self, node: ast.Name | ast.Attribute, scope: Scope, parent: ast.AST | None, typed: bool
    ) -> None:
        qn = self.qname(node, scope)
        if not qn:
            return
        call = parent if isinstance(parent, ast.Call) and parent.func is node else None
        notice = operator_notice(self.tables, self.path, node, qn, call)
        if notice is not None:
            self.rows.setdefault((notice.line, node.col_offset, notice.rule, qn), notice)
        if not typed:  # `-> torch.profiler.profile` uses no profiler: no advice
            self.advice.api(node, qn, call)


def _annotation_of(node: ast.AST) -> ast.AST | None:
    """The type annotation among the node's children (a function's return annotation, an
    argument's or an annotated assignment's), or None."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.returns
    if isinstance(node, (ast.arg, ast.AnnAssign)):
        return node.annotation
    return None


def imported_names(tree: ast.Module, leaves: frozenset[str]) -> tuple[frozenset[str], set[str]]:
    """The names import statements bind anywhere in the module, and those that rename one of
    ``leaves``."""
    names: set[str] = set()
    aliases: set[str] = set()
    for stmt in tree_statements(tree).imports:
        for alias in stmt.names:
            names.add(alias.asname or alias.name.split(".")[0])
            if alias.asname and alias.name.rsplit(".", 1)[-1] in leaves:
                aliases.add(alias.asname)
    return frozenset(names), aliases
