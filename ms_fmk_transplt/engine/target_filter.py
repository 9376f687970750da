"""The target scan's byte-level test (engine/target_scan.py): whether a file may name a listed
API (operator support, advice) where the scan would find it, before any tree is built. A listed
API's last part must stand in an import, or after a dot in a chain that starts at a name an
import binds and can end in a listed API (through the import's path when the name is an alias:
``import torch.nn as nn`` makes ``nn.Linear`` torch.nn.Linear), or anywhere after ``import *``;
or the file holds a pattern's shape. Conservative: what it cannot read (a comment in a
parenthesized import, an alias whose path it does not read) makes the file parsed."""

from __future__ import annotations

import re
from functools import lru_cache

from ms_fmk_transplt.engine.rules.family_exports import PATTERN_WORDS, may_hold_pattern
from ms_fmk_transplt.engine.word_search import WORD_BYTES, word_matches, word_search
from ms_fmk_transplt.tables import Tables


@lru_cache(maxsize=16)
def api_words(tables: Tables) -> frozenset[str]:
    return tables.operators.leaves | tables.advice.leaves


@lru_cache(maxsize=16)
def trigger_words(tables: Tables) -> frozenset[str]:
    return api_words(tables) | PATTERN_WORDS


@lru_cache(maxsize=16)
def word_pattern(words: frozenset[str]) -> re.Pattern[bytes]:
    """The words as whole words (searched with word_matches: without the look-behind)."""
    return re.compile(rb"(?:" + _words(words) + rb")(?![A-Za-z0-9_])")


# where a listed API's last part can name it: after a dot (``F.interpolate``), or in an import
# (``from torch.nn.functional import (\n interpolate as up)``, continued lines too)
ATTRIBUTE = re.compile(rb"\.\s*([A-Za-z_][A-Za-z0-9_]*)")
_IMPORTED = re.compile(rb"import\s*(\([^)]*\)|(?:[^\n\\]|\\[\s\S])*)")  # (word_matches)
_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


@lru_cache(maxsize=16)
def encoded(words: frozenset[str]) -> frozenset[bytes]:
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
            if word_search(word_pattern(words), source) is not None:
                return True
        else:
            wanted = encoded(words)
            clauses = _import_words(source)
            if clauses is None or not wanted.isdisjoint(clauses[0]):
                return True
            chains = [m for m in ATTRIBUTE.finditer(source) if m.group(1) in wanted]
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
    """Whether one of the chains (each a match of ATTRIBUTE: its dot and last part) can name
    a listed API: it starts at a name an import binds (_chain_roots' test) and the chain's own
    text ends a listed API (an import binds a name to a path ending in that name: ``from
    torch.ao.nn import qat`` makes ``qat.Linear`` torch.ao.nn.qat.Linear, which ends in
    ``qat.Linear``), or the name is an alias and the chain from one of its paths ends one
    (``import torch.nn.functional as F``: ``F.interpolate`` from torch.nn.functional; an alias
    whose path was not read: any). Or the file holds a pattern's word: a parsed file has those
    lines walked too."""
    words, aliases = clauses
    for chain in chains:
        start = chain_start(source, chain.start())
        if start is None:
            continue
        root = identifier_at(source, start)
        if root not in words:
            continue
        text = _SPACE.sub(b"", source[start : chain.end(1)])
        if text in listed:
            return True
        if root in aliases:
            paths = aliases[root]
            if paths is None or any(p + text[len(root) :] in listed for p in paths):
                return True
    return word_search(word_pattern(PATTERN_WORDS), source) is not None


_DOT = ord(".")
_FIRST = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_WHITESPACE = frozenset(b" \t\n\r\f\v")


def chain_start(source: bytes, dot: int) -> int | None:
    """Where the chain before the dot at ``dot`` starts (``a . b.c`` for the dot before
    ``c``), or None when a link is not a name (``f().sum``)."""
    while True:
        at = dot - 1
        while at >= 0 and source[at] in _WHITESPACE:
            at -= 1
        end = at + 1
        while at >= 0 and source[at] in WORD_BYTES:
            at -= 1
        start = at + 1
        if start == end or source[start] not in _FIRST:
            return None
        while at >= 0 and source[at] in _WHITESPACE:
            at -= 1
        if at < 0 or source[at] != _DOT:
            return start
        dot = at


def identifier_at(source: bytes, start: int) -> bytes:
    end = start
    while end < len(source) and source[end] in WORD_BYTES:
        end += 1
    return source[start:end]


def _words(words: set[str] | frozenset[str]) -> bytes:
    return b"|".join(re.escape(w.encode()) for w in sorted(words, key=lambda w: (-len(w), w)))
