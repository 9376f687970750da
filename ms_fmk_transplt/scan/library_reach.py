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

from ms_fmk_transplt.engine.library_facts import CPU, CUDA, Reach
from ms_fmk_transplt.scan.library_graph import MODULE_CODE, ModuleGraph, Unit

_MAX_STEPS = 12  # of a path shown
_CONSTRUCTORS = ("__init__", "__new__", "__post_init__")


class _Graph:
    def __init__(self, graphs: Iterable[ModuleGraph]) -> None:
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
        self.methods: dict[str, set[str]] = {}  # class -> the names of its own methods
        for name in self.units:
            owner, _, method = name.rpartition(".")
            if owner in self.bases:
                self.methods.setdefault(owner, set()).add(method)

    def canonical(self, dotted: str) -> str:
        seen: set[str] = set()
        while dotted not in seen and len(seen) < 16:
            seen.add(dotted)
            if dotted in self.units or dotted in self.bases:
                return dotted
            parts = dotted.split(".")
            for i in range(len(parts), 0, -1):
                target = self.aliases.get(".".join(parts[:i]))
                if target is not None and target != ".".join(parts[:i]):
                    dotted = ".".join([target, *parts[i:]])
                    break
            else:
                return dotted
        return dotted

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
    callers: dict[str, list[tuple[str, int, bool]]] = {}
    for unit in graph.units.values():
        for call in unit.calls:
            for target in graph.targets(unit, call.target):
                if target != unit.name:
                    callers.setdefault(target, []).append((unit.name, call.line, call.guarded))
    nexts = _propagate(graph, callers)
    reach = {name: _reach(graph, name, nexts) for name in nexts}
    for cls in graph.bases:  # classes (their constructor) and inherited methods
        _class_entries(graph, cls, reach)
    for module_unit in [n for n in reach if n.endswith("." + MODULE_CODE)]:
        reach[module_unit[: -len(MODULE_CODE) - 1]] = reach.pop(module_unit)
    return reach, dict(graph.aliases)


Next = tuple[str, str | None, int]  # (kind, the callee it reaches through (None: a seed), line)


def _propagate(graph: _Graph, callers: dict[str, list[tuple[str, int, bool]]]) -> dict[str, Next]:
    nexts: dict[str, Next] = {}
    for kind in (CUDA, CPU):
        queue: deque[str] = deque()
        for name, unit in graph.units.items():
            if unit.npu_aware:
                continue  # it has an NPU arm: neither its lines nor its calls count
            if name not in nexts and any(s.kind == kind for s in unit.seeds):
                nexts[name] = (kind, None, 0)
                queue.append(name)
        if kind == CPU:  # a guarded call of code that needs CUDA
            for name, (found, _, _) in list(nexts.items()):
                for caller, line, guarded in callers.get(name, ()):
                    aware = graph.units[caller].npu_aware
                    if found == CUDA and guarded and caller not in nexts and not aware:
                        nexts[caller] = (CPU, name, line)
                        queue.append(caller)
        while queue:
            name = queue.popleft()
            for caller, line, guarded in callers.get(name, ()):
                if caller in nexts or (kind == CUDA and guarded) or graph.units[caller].npu_aware:
                    continue
                nexts[caller] = (kind, name, line)
                queue.append(caller)
    return nexts


def _reach(graph: _Graph, name: str, nexts: dict[str, Next]) -> Reach:
    kind = nexts[name][0]
    steps: list[str] = []
    current: str | None = name
    while current is not None and len(steps) < _MAX_STEPS:
        _, callee, line = nexts[current]
        where = graph.paths[current]
        if callee is None:
            unit = graph.units[current]
            seed = next(s for s in unit.seeds if s.kind == kind or kind == CPU)
            steps.append(f"{_shown(current)} ({where}:{unit.line})")
            steps.append(f"{where}:{seed.line}: {seed.what}")
            break
        steps.append(f"{_shown(current)} ({where}:{line})")
        current = callee
    return Reach(kind, tuple(steps))


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
