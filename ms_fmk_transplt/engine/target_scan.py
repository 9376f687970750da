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
from functools import lru_cache
from typing import Any

from ms_fmk_transplt.engine.cst_names import scoped_children
from ms_fmk_transplt.engine.rules.advice.advice_rows import (
    PATTERN_WORDS,
    AdviceFinder,
    may_hold_pattern,
)
from ms_fmk_transplt.engine.rules.operator_support.operator_rows import operator_notice
from ms_fmk_transplt.engine.scope_model import Scope, UnsupportedScope, chosen_name, full_name
from ms_fmk_transplt.engine.scopes import Scopes
from ms_fmk_transplt.engine.spans.anchors import lf_line_numbers
from ms_fmk_transplt.engine.statements import tree_statements
from ms_fmk_transplt.engine.word_search import word_matches, word_search
from ms_fmk_transplt.events import Notice
from ms_fmk_transplt.tables import Tables


@lru_cache(maxsize=16)
def api_words(tables: Tables) -> frozenset[str]:
    return tables.operators.leaves | tables.advice.leaves


@lru_cache(maxsize=16)
def trigger_words(tables: Tables) -> frozenset[str]:
    return api_words(tables) | PATTERN_WORDS


@lru_cache(maxsize=16)
def _pattern(words: frozenset[str]) -> re.Pattern[bytes]:
    """The words as whole words (searched with word_matches: without the look-behind)."""
    return re.compile(rb"(?:" + _words(words) + rb")(?![A-Za-z0-9_])")


# where a listed API's last part can name it: after a dot (``F.interpolate``), or in an import
# (``from torch.nn.functional import (\n interpolate as up)``, continued lines too)
_ATTRIBUTE = re.compile(rb"\.\s*([A-Za-z_][A-Za-z0-9_]*)")
_IMPORTED = re.compile(rb"import\s*(\([^)]*\)|(?:[^\n\\]|\\[\s\S])*)")  # (word_matches)
_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


@lru_cache(maxsize=16)
def _encoded(words: frozenset[str]) -> frozenset[bytes]:
    return frozenset(w.encode() for w in words)


def may_concern_target(source: bytes, tables: Tables) -> bool:
    """Cheap byte-level test: a listed API's last part where it can name the API (in an
    import; after a dot, in a chain whose first name an import may bind; anywhere after
    ``import *``), or a pattern's shape. A bare ``disable=True`` or ``sum(x)`` cannot: names
    resolve through imports, and an unimported bare name is a builtin or the file's own; nor
    can ``x.sum()`` when no import binds ``x`` (the scan walks only chains from an imported
    name: parsing such a file found nothing to walk)."""
    words = api_words(tables)
    if words:
        if b"import *" in source:
            if word_search(_pattern(words), source) is not None:
                return True
        else:
            wanted = _encoded(words)
            clauses = _import_words(source)
            if clauses is None or not wanted.isdisjoint(clauses[0]):
                return True
            chains = [m for m in _ATTRIBUTE.finditer(source) if m.group(1) in wanted]
            if chains and _chain_from(source, chains, clauses, _listed_suffixes(tables)):
                return True
    return may_hold_pattern(source, tables.advice.by_pattern)


Aliases = dict[bytes, "set[bytes] | None"]  # name after ``as`` -> its paths (None: unknown)


def _import_words(source: bytes) -> tuple[set[bytes], Aliases] | None:
    """The words of the file's import clauses (every name an import statement binds is among
    them), and the names bound after an ``as``, each with the paths it is bound to. None when
    a parenthesized clause holds a comment (its ``)`` could end the clause early): unknown."""
    words: set[bytes] = set()
    aliases: Aliases = {}
    for match in word_matches(_IMPORTED, source):
        clause = match.group(1)
        if clause.startswith(b"(") and b"#" in clause:
            return None
        words.update(_NAME.findall(clause))
        if b"as" in clause:
            _add_aliases(source, match.start(), clause, aliases)
    return words, aliases


_ALIAS = re.compile(rb"\bas\s+([A-Za-z_][A-Za-z0-9_]*)")
_AS_ITEM = re.compile(rb"\s*([A-Za-z_][A-Za-z0-9_.]*)\s+as\s+([A-Za-z_][A-Za-z0-9_]*)\s*")
_FROM = re.compile(rb"from\s+([A-Za-z_][A-Za-z0-9_.]*)\s+$")
_SPACE = re.compile(rb"\s+")


def _add_aliases(source: bytes, at: int, clause: bytes, aliases: Aliases) -> None:
    """The ``X as A`` items of the import clause at ``at``: A bound to X, or to M.X after
    ``from M`` (an item not read so, or a relative import: its names' paths unknown)."""
    line_start = source.rfind(b"\n", 0, at)
    before = source[max(0, line_start) : at]
    module = _FROM.search(before)
    # `from . import`, or a `from` on the line before a backslash: the path is not read here
    continued = line_start > 0 and source[:line_start].rstrip(b"\r").endswith(b"\\")
    relative = module is None and (b"from" in before or continued)
    text = clause.strip(b"()").replace(b"\\\n", b" ").split(b"#", 1)[0]
    for item in text.split(b","):
        if b" as" not in item and b"\tas" not in item:
            continue
        read = _AS_ITEM.fullmatch(item)
        if read is None or relative:
            for name in _ALIAS.findall(item):
                aliases[name] = None
            continue
        path = (module.group(1) + b"." if module else b"") + read.group(1)
        known = aliases.setdefault(read.group(2), set())
        if known is not None:
            known.add(path)


@lru_cache(maxsize=16)
def _listed_suffixes(tables: Tables) -> frozenset[bytes]:
    """Every dotted tail of every listed API (``qat.Linear``, ``nn.qat.Linear``, ...)."""
    names = {*tables.operators.entries, *tables.advice.by_api}
    return frozenset(
        ".".join(parts[i:]).encode()
        for parts in (n.split(".") for n in names)
        for i in range(len(parts))
    )


def _chain_from(
    source: bytes,
    chains: list[re.Match[bytes]],
    clauses: tuple[set[bytes], Aliases],
    listed: frozenset[bytes],
) -> bool:
    """Whether one of the chains (each a match of _ATTRIBUTE: its dot and last part) can name
    a listed API: it starts at a name an import binds (_chain_roots' test) and the chain's own
    text ends a listed API (an import binds a name to a path ending in that name: ``from
    torch.ao.nn import qat`` makes ``qat.Linear`` torch.ao.nn.qat.Linear, which ends in
    ``qat.Linear``), or the name is an alias and the chain from one of its paths ends one
    (``import torch.nn.functional as F``: ``F.interpolate`` from torch.nn.functional; an alias
    whose path was not read: any). Or the file holds a pattern's word: a parsed file has those
    lines walked too."""
    words, aliases = clauses
    for chain in chains:
        start = _root_of(source, chain.start())
        if start is None:
            continue
        root = _identifier_at(source, start)
        if root not in words:
            continue
        text = _SPACE.sub(b"", source[start : chain.end(1)])
        if text in listed:
            return True
        if root in aliases:
            paths = aliases[root]
            if paths is None or any(p + text[len(root) :] in listed for p in paths):
                return True
    return word_search(_pattern(PATTERN_WORDS), source) is not None


def target_notices(
    source: bytes,
    path: str,
    tables: Tables,
    tree: ast.Module | None = None,
    answered: frozenset[tuple[int, str]] = frozenset(),
) -> list[Notice] | None:
    """The rows of one file; None when it was not parsed (nothing to look for, or it does not
    parse: the passes report that). ``tree``: the span pass's tree of the same source;
    ``answered``: (line, advice id) pairs a change already acted on (no advice row there)."""
    if not may_concern_target(source, tables):
        return None
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    scan = TargetScan(source, path, tables, tree)
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
    chains = _chain_roots(source, _encoded(api_words(tables)), scan.imported)
    lines = _lines(source, scan.line_patterns(), chains)
    if not lines:
        return []
    try:
        scan.run(lines, Scopes(tree, walrus=b":=" in source))
    except (UnsupportedScope, RecursionError):
        return []
    return scan.finish()


_DOT = ord(".")
_IDENTIFIER = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_FIRST = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_WHITESPACE = frozenset(b" \t\n\r\f\v")


def _chain_roots(source: bytes, apis: frozenset[bytes], roots: frozenset[str]) -> list[int]:
    """Offsets of the roots of the dotted chains that end in a listed API's last part and
    start at an imported name (``F.interpolate``, ``torch.nn.functional.interpolate``)."""
    found = []
    for match in _ATTRIBUTE.finditer(source):
        if match.group(1) in apis:
            start = _root_of(source, match.start())
            if start is not None and _identifier_at(source, start).decode() in roots:
                found.append(start)
    return found


def _root_of(source: bytes, dot: int) -> int | None:
    """Where the chain before the dot at ``dot`` starts (``a . b.c`` for the dot before
    ``c``), or None when a link is not a name (``f().sum``)."""
    while True:
        at = dot - 1
        while at >= 0 and source[at] in _WHITESPACE:
            at -= 1
        end = at + 1
        while at >= 0 and source[at] in _IDENTIFIER:
            at -= 1
        start = at + 1
        if start == end or source[start] not in _FIRST:
            return None
        while at >= 0 and source[at] in _WHITESPACE:
            at -= 1
        if at < 0 or source[at] != _DOT:
            return start
        dot = at


def _identifier_at(source: bytes, start: int) -> bytes:
    end = start
    while end < len(source) and source[end] in _IDENTIFIER:
        end += 1
    return source[start:end]


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
        starts = [0] + [m.end() for m in re.finditer(rb"\r\n|\r|\n", source)]
        return sorted({bisect_left(starts, offset + 1) for offset in found_at})
    return lf_line_numbers(source, found_at)


def _words(words: set[str] | frozenset[str]) -> bytes:
    return b"|".join(re.escape(w.encode()) for w in sorted(words, key=lambda w: (-len(w), w)))


class TargetScan:
    def __init__(self, source: bytes, path: str, tables: Tables, tree: ast.Module) -> None:
        self.path = path
        self.tables = tables
        self.tree = tree
        self.scopes: Scopes | None = None
        self.words = trigger_words(tables)
        # names bound by an import anywhere: only a chain rooted in one can name a listed API;
        # aliases: `from torch import cdist as cd` binds a listed API's last part to `cd`
        self.imported, self.aliases = imported_names(tree, api_words(tables))
        self.advice = AdviceFinder(source, path, tables, tree, self.qname)
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
            out.append((_pattern(frozenset(bare)), None))
        if self.tables.advice.by_pattern:
            out.append((_pattern(PATTERN_WORDS), None))
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

    def _walk(self, node: ast.AST, scope: Scope, parent: ast.AST | None) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return  # LibCST gives names inside imports no scope: the passes report imports
        assert self.scopes is not None  # set by run()
        self.advice.visit(node, parent, scope)
        if isinstance(node, (ast.Name, ast.Attribute)):
            outermost = not (isinstance(parent, ast.Attribute) and parent.value is node)
            if outermost and self._leaf(node) in self._names and self._root_imported(node):
                self._name(node, scope, parent)
        for child, child_scope in scoped_children(node, scope, self.scopes):
            if self._spans_trigger(child):
                self._walk(child, child_scope, node)

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

    def _name(self, node: ast.Name | ast.Attribute, scope: Scope, parent: ast.AST | None) -> None:
        qn = self.qname(node, scope)
        if not qn:
            return
        call = parent if isinstance(parent, ast.Call) and parent.func is node else None
        notice = operator_notice(self.tables, self.path, node, qn, call)
        if notice is not None:
            self.rows.setdefault((notice.line, node.col_offset, notice.rule, qn), notice)
        self.advice.api(node, qn)


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
