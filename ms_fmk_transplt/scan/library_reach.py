"""A library's call graph, from its modules' graphs (library_graph.py), and what of it reaches
CUDA-specific code: a unit with a seed reaches it, and so does every unit that calls one that
does, transitively, keeping one shortest path. A call a CUDA test selects (``if
torch.cuda.is_available(): fused(x)``) passes on a "cpu" reach only (without CUDA the caller
takes its other path); "cuda" wins over "cpu".

Calls are resolved once every module is read: re-exports followed, a class called is its
``__init__`` / ``__new__`` / ``__post_init__``, a method is looked up in its class and then its
bases (the library's own), ``self.m()`` in the unit's class, ``super().m()`` in its bases; an
import runs the imported module's code. The result names each function, method (inherited
ones too: ``Sub.fit``), class (its constructor) and module (its code, run at import) that
reaches."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import NamedTuple

from ms_fmk_transplt.engine.library_facts import CPU, CUDA, Reach, resolved
from ms_fmk_transplt.scan.library_graph import MODULE_CODE, ModuleGraph, Unit

_MAX_STEPS = 12  # of a path shown
_CONSTRUCTORS = ("__init__", "__new__", "__post_init__")


def _star_aliases(graphs: Iterable[ModuleGraph], graph: _Graph) -> None:
    """``from .trainer import *``: each public name the module defines is a re-export."""
    importers: dict[str, list[str]] = {}
    for module_graph in graphs:
        for star in module_graph.stars:
            importers.setdefault(star, []).append(module_graph.module)
    if not importers:
        return
    for name in [*graph.units, *graph.bases]:
        module, _, own = name.rpartition(".")
        if module in importers and not own.startswith("_") and own != MODULE_CODE:
            for importer in importers[module]:
                graph.aliases.setdefault(f"{importer}.{own}", name)


class _Graph:
    def __init__(self, graphs: list[ModuleGraph]) -> None:
        self.units: dict[str, Unit] = {}
        self.paths: dict[str, str] = {}  # unit -> its module's path
        self.bases: dict[str, tuple[str, ...]] = {}
        self.aliases: dict[str, str] = {}
        for graph in graphs:
            for unit in graph.units:
                self.units[unit.name] = unit
                self.paths[unit.name] = graph.path
            self.bases.update(graph.classes)
            self.aliases.update(graph.exports)
        _star_aliases(graphs, self)
        self.methods: dict[str, set[str]] = {}  # class -> the names of its own methods
        for name in self.units:
            owner, _, method = name.rpartition(".")
            if owner in self.bases:
                self.methods.setdefault(owner, set()).add(method)

    def canonical(self, dotted: str) -> str:
        return resolved(dotted, self.aliases, self._defined)

    def _defined(self, dotted: str) -> bool:
        return dotted in self.units or dotted in self.bases

    def member(self, cls: str, name: str, seen: set[str] | None = None) -> str | None:
        """The unit ``cls.name`` runs: its own, else its bases' (left first)."""
        seen = seen if seen is not None else set()
        if cls in seen:
            return None
        seen.add(cls)
        own = f"{cls}.{name}"
        if own in self.units:
            return own
        for base in self.bases.get(cls, ()):
            found = self.member(self.canonical(base), name, seen)
            if found is not None:
                return found
        return None

    def targets(self, unit: Unit, target: str) -> list[str]:
        """The units a call runs."""
        if target.startswith(("self:", "super:")):
            how, cls, name = target.split(":", 2)
            if how == "self":
                found = self.member(cls, name)
                return [found] if found else []
            bases = [self.member(self.canonical(b), name) for b in self.bases.get(cls, ())]
            return [b for b in bases if b][:1]
        dotted = self.canonical(target)
        if dotted in self.units:
            return [dotted]
        if dotted in self.bases:
            return [m for m in (self.member(dotted, c) for c in _CONSTRUCTORS) if m]
        owner, _, name = dotted.rpartition(".")
        owner = self.canonical(owner) if owner else ""
        if owner in self.bases:  # Class.method, also inherited
            found = self.member(owner, name)
            return [found] if found else []
        return []


def library_reach(graphs: list[ModuleGraph]) -> tuple[dict[str, Reach], dict[str, str]]:
    """Every API of the library that reaches CUDA-specific code, with its path; and its
    re-exports (name -> what it names)."""
    graph = _Graph(graphs)
    callers: dict[str, list[Edge]] = {}
    for unit in graph.units.values():
        for call in unit.calls:
            for target in graph.targets(unit, call.target):
                if target != unit.name:
                    edge = Edge(unit.name, call.line, call.guarded, call.conditional)
                    callers.setdefault(target, []).append(edge)
    nexts = _propagate(graph, callers)
    reach = {name: _reach(graph, name, nexts) for name in nexts}
    for cls in graph.bases:  # classes (their constructor) and inherited methods
        _class_entries(graph, cls, reach)
    for module_unit in [n for n in reach if n.endswith("." + MODULE_CODE)]:
        reach[module_unit[: -len(MODULE_CODE) - 1]] = reach.pop(module_unit)
    return reach, dict(graph.aliases)


class Edge(NamedTuple):
    caller: str
    line: int
    guarded: bool  # a CUDA test selects the call
    conditional: bool  # another test selects it


class Next(NamedTuple):
    tier: tuple[str, bool]  # (kind, whether the path passes a test)
    callee: str | None  # the unit it reaches through (None: its own line)
    line: int
    conditional: bool  # the call to the callee is under a test


# the order paths are chosen in: a sure failure, a sure CPU path, then those behind a test
TIERS = ((CUDA, False), (CPU, False), (CUDA, True), (CPU, True))


def _through(tier: tuple[str, bool], edge: Edge) -> tuple[str, bool]:
    """The tier of a caller reaching a callee of ``tier`` through ``edge``."""
    return (CPU if edge.guarded else tier[0], tier[1] or edge.conditional)


def _propagate(graph: _Graph, callers: dict[str, list[Edge]]) -> dict[str, Next]:
    nexts: dict[str, Next] = {}
    for tier in TIERS:
        queue: deque[str] = deque()

        def reached(name: str, callee: str | None, line: int, conditional: bool) -> None:
            nexts[name] = Next(tier, callee, line, conditional)  # noqa: B023 (called at once)
            queue.append(name)  # noqa: B023

        for name, unit in graph.units.items():
            if name in nexts or unit.npu_aware:  # it has an NPU arm: it does not count
                continue
            if any((s.kind, s.conditional) == tier for s in unit.seeds):
                reached(name, None, 0, False)
        for name, found in list(nexts.items()):  # from the paths of the tiers before
            if found.tier != tier:
                for edge in callers.get(name, ()):
                    if _open(graph, nexts, edge) and _through(found.tier, edge) == tier:
                        reached(edge.caller, name, edge.line, edge.conditional)
        while queue:
            name = queue.popleft()
            for edge in callers.get(name, ()):
                if _open(graph, nexts, edge) and _through(tier, edge) == tier:
                    reached(edge.caller, name, edge.line, edge.conditional)
    return nexts


def _open(graph: _Graph, nexts: dict[str, Next], edge: Edge) -> bool:
    return edge.caller not in nexts and not graph.units[edge.caller].npu_aware


def _reach(graph: _Graph, name: str, nexts: dict[str, Next]) -> Reach:
    tier = nexts[name].tier
    steps: list[str] = []
    current: str | None = name
    while current is not None and len(steps) < _MAX_STEPS:
        found = nexts[current]
        where = graph.paths[current]
        if found.callee is None:
            unit = graph.units[current]
            seed = next(s for s in unit.seeds if (s.kind, s.conditional) == found.tier)
            steps.append(f"{_shown(current)} ({where}:{unit.line})")
            under = ", under a test" if seed.conditional else ""
            steps.append(f"{where}:{seed.line}: {seed.what}{under}")
            break
        under = ", under a test" if found.conditional else ""
        steps.append(f"{_shown(current)} ({where}:{found.line}{under})")
        current = found.callee
    return Reach(tier[0], tuple(steps), tier[1])


def _shown(unit: str) -> str:
    return unit[: -len(MODULE_CODE) - 1] if unit.endswith("." + MODULE_CODE) else unit


def _class_entries(graph: _Graph, cls: str, reach: dict[str, Reach]) -> None:
    constructors = [m for m in (graph.member(cls, c) for c in _CONSTRUCTORS) if m in reach]
    if constructors and cls not in reach:
        reach[cls] = reach[constructors[0]]
    names = _method_names(graph, cls, set())
    for name in names:
        found = graph.member(cls, name)
        if found is not None and found in reach and f"{cls}.{name}" not in reach:
            reach[f"{cls}.{name}"] = reach[found]


def _method_names(graph: _Graph, cls: str, seen: set[str]) -> set[str]:
    if cls in seen:
        return set()
    seen.add(cls)
    names = set(graph.methods.get(cls, ()))
    for base in graph.bases.get(cls, ()):
        names |= _method_names(graph, graph.canonical(base), seen)
    return names
