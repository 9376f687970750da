"""Imports of a listed library that cannot run anything on the device (rule
``libraries.cuda_only``: no row for them).

An import under ``if TYPE_CHECKING:`` never runs. A name used only as a type -- in annotations
(string or not), as the class of ``isinstance`` / ``issubclass``, or probed with ``hasattr`` /
``getattr(x, "name") in ...`` -- runs no kernel either; its import alone is harmless when it
cannot fail on an NPU host: guarded (``if is_bitsandbytes_available():``, a ``try`` that catches
ImportError) or a part of a library that imports on any host (transformers'
``BitsAndBytesConfig``). trl's trainers import ``BitsAndBytesConfig`` for a string annotation and
``bitsandbytes`` behind ``is_bitsandbytes_available()`` for ``isinstance`` tests: no work there.
A real use elsewhere in the file (a call, an attribute read) keeps the row.
"""

from __future__ import annotations

import ast
import re

from ms_fmk_transplt.engine.spans.shared_tree import analysable_tree

_TYPE_TESTS = frozenset({"isinstance", "issubclass"})
_PROBES = frozenset({"hasattr", "getattr"})
_AVAILABLE = re.compile(r"(?:^is_\w*available$|^find_spec$|^find_loader$)")
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception"})
_WORD = re.compile(r"[A-Za-z_]\w*")

Import = tuple[str, int, int]  # the imported dotted name, first and last line of the statement


def type_only_imports(source: bytes, roots: frozenset[str]) -> dict[Import, bool]:
    """The imports of ``source`` from the modules ``roots`` (the file's library rows' leading
    names) whose bound name is used, and only as a type, each with whether it cannot fail on
    any host (guarded); those under ``TYPE_CHECKING`` too (never run: True)."""
    tree = analysable_tree(source)
    if tree is None:
        return {}
    parents = _parents(tree)
    typed, quoted = _annotations(tree)
    imports: dict[Import, tuple[str, str]] = {}
    only_types: dict[str, bool] = dict.fromkeys(quoted, True)  # bound name -> type uses only
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and not node.level):
            _imports(node, parents, imports, roots)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if id(node) in typed:
                only_types.setdefault(node.id, True)
            else:
                only_types[node.id] = only_types.get(node.id, True) and _type_use(node, parents)
    found: dict[Import, bool] = {}
    for key, (bound, guard) in imports.items():
        if guard == _NEVER_RUNS or only_types.get(bound, False):
            found[key] = guard != _UNGUARDED
    return found


_NEVER_RUNS = "never"  # under TYPE_CHECKING
_GUARDED = "guarded"
_UNGUARDED = ""


def _imports(
    node: ast.Import | ast.ImportFrom,
    parents: dict[int, ast.AST],
    imports: dict[Import, tuple[str, str]],
    wanted: frozenset[str],
) -> None:
    where = _guard(node, parents)
    for alias in node.names:
        if alias.name == "*":
            continue
        if isinstance(node, ast.Import):
            name, bound = alias.name, alias.asname or alias.name.split(".")[0]
        else:
            name, bound = f"{node.module}.{alias.name}", alias.asname or alias.name
        if name.split(".", 1)[0] in wanted:
            imports[(name, node.lineno, node.end_lineno or node.lineno)] = (bound, where)


def _guard(node: ast.AST, parents: dict[int, ast.AST]) -> str:
    """How the import is kept from failing: never run, guarded, or not at all."""
    child, parent = node, parents.get(id(node))
    guarded = False
    while parent is not None:
        if isinstance(parent, ast.If) and child in parent.body:
            if _names(parent.test) & {"TYPE_CHECKING"}:
                return _NEVER_RUNS
            guarded = guarded or any(_AVAILABLE.match(n) for n in _names(parent.test))
        elif isinstance(parent, ast.Try) and child in parent.body:
            guarded = guarded or any(_catches(h) for h in parent.handlers)
        child, parent = parent, parents.get(id(parent))
    return _GUARDED if guarded else _UNGUARDED


def _names(test: ast.expr) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(test):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
    return found


def _catches(handler: ast.ExceptHandler) -> bool:
    """A handler that falls back (not one that raises: ``except ImportError: raise ...``)."""
    if handler.body and isinstance(handler.body[-1], ast.Raise):
        return False
    if handler.type is None:
        return True
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(_names(kind) & _IMPORT_ERRORS for kind in kinds)


def _annotations(tree: ast.Module) -> tuple[set[int], set[str]]:
    """The ids of the nodes inside annotations, and the names string annotations spell."""
    roots: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            roots.extend(a.annotation for a in every if a is not None and a.annotation)
            if node.returns is not None:
                roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    inside = [n for root in roots for n in ast.walk(root)]
    quoted = {
        word
        for n in inside
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
        for word in _WORD.findall(n.value)
    }
    return {id(n) for n in inside}, quoted


def _type_use(name: ast.Name, parents: dict[int, ast.AST]) -> bool:
    """``name`` (or ``name.a.b``) is the class of a type test or the object of a probe."""
    node: ast.AST = name
    parent = parents.get(id(node))
    while isinstance(parent, ast.Attribute):
        node, parent = parent, parents.get(id(parent))
    while isinstance(parent, (ast.Tuple, ast.List)):
        node, parent = parent, parents.get(id(parent))
    if not (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)):
        return False
    called = parent.func.id
    if called in _TYPE_TESTS:
        return len(parent.args) == 2 and parent.args[1] is node
    if called not in _PROBES or not parent.args or parent.args[0] is not node:
        return False
    return called == "hasattr" or isinstance(parents.get(id(parent)), ast.Compare)


def import_statements(source: bytes, roots: frozenset[str]) -> dict[Import, bool]:
    """The imports of ``source`` from the modules ``roots``, wherever they stand, each with
    whether it cannot fail (guarded, or never run)."""
    tree = analysable_tree(source)
    if tree is None:
        return {}
    parents = _parents(tree)
    found: dict[Import, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and not node.level):
            _imports(node, parents, found, roots)
    return {key: guard != _UNGUARDED for key, (_, guard) in found.items()}


def _parents(tree: ast.Module) -> dict[int, ast.AST]:
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    return parents
