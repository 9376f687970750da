"""One module of an installed library, read for ``--deps``: its units of code (each function
and method, and the module's own code, run when it is imported), the calls each makes (named
as absolute dotted names where its imports and definitions say what they are; ``self.m()`` and
``super().m()`` kept with their class, resolved by library_reach.py once every module is
read), its classes with their bases and methods, what it re-exports (``from .trainer import
Trainer`` in an ``__init__``), and the lines the engine's rules found CUDA-specific
(library_seeds.py), each placed in its unit and marked when a CUDA test selects it
(``if torch.cuda.is_available():``, ``if self.use_cuda:``, ``x if x.is_cuda else y``).

A nested function's calls are its enclosing function's; a class body's statements outside its
methods are the module's code. Nothing here is imported or run."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ms_fmk_transplt.engine.project_facts import absolute_module, module_name
from ms_fmk_transplt.engine.scope_model import full_name
from ms_fmk_transplt.engine.tree_nodes import module_level
from ms_fmk_transplt.scan.library_lines import LineFacts, cuda_test

MODULE_CODE = "<module>"  # the unit of a module's own code: "<pkg.mod>.<module>"
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_NPU_WORD = re.compile(r"(?:^|_)npu(?:_|$)|torch_npu", re.I)  # is_torch_npu_available, torch.npu
_NPU_STRING = re.compile(r"npu(?::|$)")  # "npu", "npu:0"


@dataclass(frozen=True)
class Call:
    """A call of a unit: ``target`` is a dotted name (``pkg.mod.f``, ``pkg.mod.C.m``), or
    ``self:<class>:<name>`` / ``super:<class>:<name>`` for a method of the unit's class."""

    target: str
    line: int
    guarded: bool  # inside code a CUDA test selects
    conditional: bool = False  # inside code another test selects (an ``if``, an ``except``)


@dataclass(frozen=True)
class Seed:
    """A CUDA-specific line of a unit: ``kind`` "cuda" (fails without CUDA) or "cpu" (takes
    another path, or switches a CUDA feature off, without it); ``what``: the code, briefly."""

    line: int
    kind: str
    what: str
    conditional: bool = False  # inside code a test (not a CUDA one) selects


@dataclass
class Unit:
    name: str  # dotted: pkg.mod.f, pkg.mod.C.m, pkg.mod.<module>
    line: int
    end: int
    calls: list[Call] = field(default_factory=list)
    seeds: list[Seed] = field(default_factory=list)
    npu_aware: bool = False  # it asks for the NPU itself (is_torch_npu_available, "npu")


@dataclass(frozen=True)
class ModuleGraph:
    module: str  # dotted
    path: str  # from the folder holding the package: "trainer/trainer.py"
    units: tuple[Unit, ...]
    classes: tuple[tuple[str, tuple[str, ...]], ...]  # (class, its bases as dotted names)
    exports: tuple[tuple[str, str], ...]  # (module.name, what it names) for imported names
    stars: tuple[str, ...] = ()  # the modules it imports * from (at module level)


def module_graph(rel_path: str, tree: ast.Module, lines: LineFacts) -> ModuleGraph:
    """The module's graph (``rel_path``: from the folder holding the package; ``lines``: its
    line_facts; no seeds yet: place_seeds adds them)."""
    module = module_name(rel_path)
    reader = _Reader(module, rel_path, lines)
    reader.read_module(tree)
    return ModuleGraph(
        module,
        rel_path,
        tuple(reader.units),
        tuple(reader.classes),
        tuple(sorted(reader.exports.items())),
        tuple(reader.stars),
    )


def place_seeds(graph: ModuleGraph, lines: LineFacts, seeds: list[Seed]) -> None:
    """Each seed into the innermost unit holding its line (the module's code when none); a
    seed a CUDA test selects becomes a "cpu" one; none on the line of a CUDA test itself, in
    an annotation, or for a ``"cuda"`` string that is no device (a test, a path, a message)."""
    if not seeds:
        return
    units = sorted((u for u in graph.units if not u.name.endswith(MODULE_CODE)), key=_span)
    module_unit = next(u for u in graph.units if u.name.endswith(MODULE_CODE))
    for seed in seeds:
        holder = module_unit
        for unit in units:
            if unit.line <= seed.line <= unit.end and _span(unit) <= _span(holder):
                holder = unit
        string = seed.what[:1] in ("'", '"') or seed.what[:2] in ('f"', "f'")
        if holder is module_unit and (string or seed.line in lines.optional):
            continue  # a "cuda" default or choice, an optional import: no use at import
        if string and seed.line not in lines.device_strings:
            continue  # x.device.type == "cuda", os.path.join("cuda", ...): no device
        named = lines.annotations.get(seed.line, "")
        if seed.line in lines.tests or (named and seed.what.split(":")[0] in named):
            continue  # `if x.is_cuda:`, `scaler: torch.cuda.amp.GradScaler`: no use
        kind = "cpu" if seed.line in lines.guarded else seed.kind
        holder.seeds.append(Seed(seed.line, kind, seed.what, seed.line in lines.conditional))


def _span(unit: Unit) -> int:
    return unit.end - unit.line if not unit.name.endswith(MODULE_CODE) else 1 << 30


class _Reader:
    def __init__(self, module: str, rel_path: str, lines: LineFacts) -> None:
        self.lines = lines
        self.module = module
        self.rel_path = rel_path
        self.units: list[Unit] = []
        self.classes: list[tuple[str, tuple[str, ...]]] = []
        self.exports: dict[str, str] = {}
        self.stars: list[str] = []
        self.names: dict[str, str] = {}  # module-level bindings -> dotted

    def read_module(self, tree: ast.Module) -> None:
        own = Unit(f"{self.module}.{MODULE_CODE}", 1, 1 << 30)
        # (the block of `if __name__ == "__main__":` runs when the module is a script, not
        # when it is imported)
        top = list(module_level([s for s in tree.body if not _main_guard(s)]))
        for stmt in top:  # bindings first: a function may call what is defined below it
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self._bind_import(stmt, self.names, exported=True)
            elif isinstance(stmt, (*_DEFS, ast.ClassDef)):
                self.names[stmt.name] = f"{self.module}.{stmt.name}"
        self.units.append(own)
        for stmt in top:
            if isinstance(stmt, _DEFS):
                self._function(stmt, f"{self.module}.{stmt.name}", None)
            elif isinstance(stmt, ast.ClassDef):
                self._class(stmt, f"{self.module}.{stmt.name}", own)
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                if any(stmt is s for s in tree.body):  # (one under `if`/`try` is optional)
                    self._import_calls(stmt, own)
            elif not isinstance(stmt, (ast.If, ast.Try, ast.With)):
                self._calls([stmt], own, self.names, None, {})
            else:  # its test / items: its blocks are in `top`
                header = [getattr(stmt, "test", None), *getattr(stmt, "items", [])]
                self._calls([n for n in header if n is not None], own, self.names, None, {})

    def _class(self, node: ast.ClassDef, name: str, own: Unit) -> None:
        bases = tuple(b for b in (self._dotted(e, self.names) for e in node.bases) if b)
        self.classes.append((name, bases))
        kept: dict[str, str] = {}  # self.x = Class(...) in any method: x's class in all
        for stmt in node.body:
            if isinstance(stmt, _DEFS):
                for inner in ast.walk(stmt):
                    if isinstance(inner, ast.Assign) and isinstance(inner.value, ast.Call):
                        made = self._dotted(inner.value.func, self.names)
                        for target in inner.targets:
                            key = _instance_key(target)
                            if made and key.startswith("self."):
                                kept[key] = made
        for stmt in node.body:
            if isinstance(stmt, _DEFS):
                self._function(stmt, f"{name}.{stmt.name}", name, kept)
            elif isinstance(stmt, ast.ClassDef):
                self._class(stmt, f"{name}.{stmt.name}", own)
            else:
                self._calls([stmt], own, self.names, None, {})
        self._calls(node.decorator_list, own, self.names, None, {})

    def _function(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        name: str,
        cls: str | None,
        kept: dict[str, str] | None = None,
    ) -> None:
        unit = Unit(name, node.lineno, node.end_lineno or node.lineno)
        self.units.append(unit)
        names = dict(self.names)
        for inner in ast.walk(node):  # its own imports (a lazy import's module is loaded by
            # the time the project calls: no call of its code), and whether it knows the NPU
            if isinstance(inner, (ast.Import, ast.ImportFrom)):
                self._bind_import(inner, names, exported=False)
            elif isinstance(inner, ast.Name) and _NPU_WORD.search(inner.id):
                unit.npu_aware = True
            elif isinstance(inner, ast.Attribute) and _NPU_WORD.search(inner.attr):
                unit.npu_aware = True
            elif isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                unit.npu_aware = unit.npu_aware or _NPU_STRING.match(inner.value) is not None
        self._calls(node.body, unit, names, cls, dict(kept or {}))

    def _calls(
        self,
        nodes: Sequence[ast.AST],
        unit: Unit,
        names: dict[str, str],
        cls: str | None,
        instances: dict[str, str],
        guarded: bool = False,
    ) -> None:
        for node in nodes:
            self._visit(node, unit, names, cls, instances, guarded)

    def _visit(
        self,
        node: ast.AST,
        unit: Unit,
        names: dict[str, str],
        cls: str | None,
        instances: dict[str, str],
        guarded: bool,
    ) -> None:
        stack: list[tuple[ast.AST, bool, bool]] = [(node, guarded, False)]
        while stack:
            item, inside, chosen = stack.pop()
            if isinstance(item, (ast.If, ast.IfExp)):
                stack.append((item.test, inside, chosen))
                parts = item.body if isinstance(item.body, list) else [item.body]
                others = item.orelse if isinstance(item.orelse, list) else [item.orelse]
                if cuda_test(item.test):
                    stack.extend((p, True, chosen) for p in [*parts, *others])
                else:
                    stack.extend((p, inside, True) for p in [*parts, *others])
                continue
            if isinstance(item, ast.ExceptHandler):
                stack.extend((child, inside, True) for child in item.body)
                continue
            if isinstance(item, ast.Assign) and isinstance(item.value, ast.Call):
                made = self._dotted(item.value.func, names, cls, instances)
                for target in item.targets:
                    key = _instance_key(target)
                    if key and made and not made.startswith(("self:", "super:")):
                        instances[key] = made
            if isinstance(item, ast.Call):
                called = self._dotted(item.func, names, cls, instances)
                if called:
                    line = item.lineno  # (after `if not x.is_cuda: return`: guarded too)
                    guarded = inside or line in self.lines.guarded
                    unit.calls.append(Call(called, line, guarded, chosen))
            children = reversed(list(ast.iter_child_nodes(item)))
            stack.extend((child, inside, chosen) for child in children)

    def _dotted(
        self,
        node: ast.AST,
        names: dict[str, str],
        cls: str | None = None,
        instances: dict[str, str] | None = None,
    ) -> str:
        """What an expression names, as a dotted name ("" when it cannot be said)."""
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "super"
            and cls is not None
        ):
            return f"super:{cls}:{node.attr}"
        dotted = full_name(node)
        if not dotted:
            return ""
        root, _, rest = dotted.partition(".")
        if instances:
            for key in (f"{root}.{rest.partition('.')[0]}" if rest else "", root):
                if key and key in instances:
                    tail = dotted[len(key) + 1 :]
                    return f"{instances[key]}.{tail}" if tail else ""
        if root in ("self", "cls") and cls is not None:
            return f"self:{cls}:{rest}" if rest and "." not in rest else ""
        if root in names:
            return f"{names[root]}.{rest}" if rest else names[root]
        return ""

    def _bind_import(
        self, node: ast.Import | ast.ImportFrom, names: dict[str, str], exported: bool
    ) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    names[top] = top
            return
        base = absolute_module(node.module or "", node.level, self.rel_path)
        for alias in node.names:
            if alias.name == "*":
                if exported and base:
                    self.stars.append(base)
                continue
            bound = alias.asname or alias.name
            names[bound] = f"{base}.{alias.name}" if base else alias.name
            if exported:
                self.exports[f"{self.module}.{bound}"] = names[bound]

    def _import_calls(self, node: ast.Import | ast.ImportFrom, unit: Unit) -> None:
        """An import runs the imported module's code (and its packages')."""
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            base = absolute_module(node.module or "", node.level, self.rel_path)
            modules = [base] if base else []
            modules += [f"{base}.{a.name}" for a in node.names if base and a.name != "*"]
        for module in modules:
            unit.calls.append(Call(f"{module}.{MODULE_CODE}", node.lineno, False))


def _main_guard(stmt: ast.stmt) -> bool:
    """``if __name__ == "__main__":``."""
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare):
        return False
    sides = [stmt.test.left, *stmt.test.comparators]
    named = any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
    return named and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)


def _instance_key(target: ast.AST) -> str:
    """``x`` or ``self.x``: where ``x = Class(...)`` keeps an instance."""
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return f"{target.value.id}.{target.attr}" if target.value.id == "self" else ""
    return ""
