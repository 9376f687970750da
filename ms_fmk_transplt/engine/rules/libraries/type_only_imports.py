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
from ms_fmk_transplt.engine.tree_nodes import tree_nodes, walk_nodes

_TYPE_TESTS = frozenset({"isinstance", "issubclass"})
_PROBES = frozenset({"hasattr", "getattr"})
_AVAILABLE = re.compile(r"(?:^is_\w*available$|^find_spec$|^find_loader$)")
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception"})
_WORD = re.compile(r"[A-Za-z_]\w*")

Import = tuple[str, int, int]  # the imported dotted name, first and last line of the statement


def type_only_imports(
    source: bytes, roots: frozenset[str], lines: frozenset[int] | None = None
) -> dict[Import, bool]:
    """The imports of ``source`` from the modules ``roots`` (the file's library rows' leading
    names) whose bound name is used, and only as a type, each with whether it cannot fail on
    any host (guarded); those under ``TYPE_CHECKING`` too (never run: True). ``lines``: only
    the import statements at these lines (those the rows are at) are looked at."""
    tree = analysable_tree(source)
    if tree is None:
        return {}
    imports = _imports_of(tree, roots, lines)
    if not imports:
        return {}
    # a name the file surely uses for real (a call, an attribute) is no type-only import:
    # only the others need the walk of the whole tree (most files of a library's rows)
    bound = {
        name
        for name, guard in imports.values()
        if guard != _NEVER_RUNS and not _used_for_real(name, source)
    }
    if not bound:
        return {key: True for key, (_, guard) in imports.items() if guard == _NEVER_RUNS}
    loads: list[ast.Name] = []
    annotations: list[ast.AST] = []
    type_uses: set[int] = set()  # ids of the names a type test or a probe is about
    for node in tree_nodes(tree):
        if isinstance(node, ast.Name):
            if node.id in bound and isinstance(node.ctx, ast.Load):
                loads.append(node)
        elif isinstance(node, ast.Call):
            _type_test(node, type_uses)
        elif isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                if isinstance(operand, ast.Call) and _called(operand) == "getattr":
                    if operand.args:
                        _mark(operand.args[0], type_uses)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            annotations.extend(a.annotation for a in every if a is not None and a.annotation)
            if node.returns is not None:
                annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
    inside = walk_nodes(annotations)
    typed = {id(n) for n in inside}
    quoted = {
        word
        for n in inside
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
        for word in _WORD.findall(n.value)
    }
    only_types: dict[str, bool] = dict.fromkeys(quoted, True)  # bound name -> type uses only
    for load in loads:
        if id(load) in typed:
            only_types.setdefault(load.id, True)
        else:
            only_types[load.id] = only_types.get(load.id, True) and id(load) in type_uses
    found: dict[Import, bool] = {}
    for key, (name, guard) in imports.items():
        if guard == _NEVER_RUNS or (name in bound and only_types.get(name, False)):
            found[key] = guard != _UNGUARDED
    return found


_NEVER_RUNS = "never"  # under TYPE_CHECKING
_GUARDED = "guarded"
_UNGUARDED = ""


def _imports_of(
    tree: ast.Module, roots: frozenset[str], lines: frozenset[int] | None
) -> dict[Import, tuple[str, str]]:
    """The imports of ``roots`` in the file (``lines``: at these lines only), with guards."""
    imports: dict[Import, tuple[str, str]] = {}
    if lines is None:
        _collect(tree.body, _UNGUARDED, imports, roots)
    for line in sorted(lines or ()):
        _collect(tree.body, _UNGUARDED, imports, roots, line)
    return imports


def _collect(
    body: list[ast.stmt],
    where: str,
    imports: dict[Import, tuple[str, str]],
    wanted: frozenset[str],
    line: int | None = None,
) -> None:
    """The imports of ``wanted`` in ``body`` and the statements inside it (``line``: only the
    statements that hold that line, going down to the import there), each with how it is
    kept from failing (``where``: never run, guarded, or not at all)."""
    for stmt in body:
        if line is not None and not stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            continue
        if isinstance(stmt, ast.Import) or (isinstance(stmt, ast.ImportFrom) and not stmt.level):
            _imports(stmt, where, imports, wanted)
        else:
            for block, guard in _blocks(stmt, where):
                _collect(block, guard, imports, wanted, line)
        if line is not None:
            return


def _blocks(stmt: ast.stmt, where: str) -> list[tuple[list[ast.stmt], str]]:
    """The statement lists inside ``stmt``, each with its guard: the body of an ``if`` on
    ``TYPE_CHECKING`` never runs; the body of an ``if is_x_available():`` or of a ``try``
    whose handler falls back is guarded; the others keep ``where``."""
    if isinstance(stmt, ast.If):
        names = _names(stmt.test)
        inner = where
        if "TYPE_CHECKING" in names:
            inner = _NEVER_RUNS
        elif where == _UNGUARDED and any(_AVAILABLE.match(n) for n in names):
            inner = _GUARDED
        return [(stmt.body, inner), (stmt.orelse, where)]
    handlers: list[ast.ExceptHandler] = list(getattr(stmt, "handlers", ()))
    inner = where
    if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        if where == _UNGUARDED and any(_catches(h) for h in handlers):
            inner = _GUARDED
    found: list[tuple[list[ast.stmt], str]] = []
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if isinstance(block, list):
            found.append((block, inner if field == "body" else where))
    found.extend((holder.body, where) for holder in (*handlers, *getattr(stmt, "cases", ())))
    return found


def _imports(
    node: ast.Import | ast.ImportFrom,
    where: str,
    imports: dict[Import, tuple[str, str]],
    wanted: frozenset[str],
) -> None:
    for alias in node.names:
        if alias.name == "*":
            continue
        if isinstance(node, ast.Import):
            name, bound = alias.name, alias.asname or alias.name.split(".")[0]
        else:
            name, bound = f"{node.module}.{alias.name}", alias.asname or alias.name
        if name.split(".", 1)[0] in wanted:
            imports[(name, node.lineno, node.end_lineno or node.lineno)] = (bound, where)


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


def _used_for_real(name: str, source: bytes) -> bool:
    """``source`` surely uses ``name`` for real (a byte-level test): a call of it or an
    attribute of it (``B(...)``, ``B.x.f(...)``, ``B.__version__``) on a line whose text
    before it holds no type test, probe, annotation, comment or string."""
    pattern = rb"(?<![\w.])" + re.escape(name.encode()) + rb"\s*[.(]"
    for found in re.finditer(pattern, source):
        start = source.rfind(b"\n", 0, found.start()) + 1
        if _UNSURE.search(source, start, found.start()) is None:
            return True
    return False


# what before a name on its line may make it a type use, or no code
_UNSURE = re.compile(rb"isinstance|issubclass|hasattr|getattr|[:#\"'@]|->")


def _called(node: ast.AST) -> str:
    """The name a call calls by a plain name (``isinstance(...)``), else ""."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id
    return ""


def _type_test(call: ast.Call, type_uses: set[int]) -> None:
    """The names ``call`` uses as types: the class of ``isinstance`` / ``issubclass`` (``x``,
    ``x.A``, ``(x, y)``) and the object of ``hasattr`` (``getattr`` only when compared: its
    Compare marks it)."""
    called = _called(call)
    if called in _TYPE_TESTS and len(call.args) == 2:
        _mark(call.args[1], type_uses)
    elif called == "hasattr" and call.args:
        _mark(call.args[0], type_uses)


def _mark(node: ast.AST, type_uses: set[int]) -> None:
    """The root names of ``node``: ``a`` of ``a.b.c``, each of a tuple's or a list's."""
    if isinstance(node, (ast.Tuple, ast.List)):
        for item in node.elts:
            _mark(item, type_uses)
        return
    while isinstance(node, ast.Attribute):
        node = node.value
    if isinstance(node, ast.Name):
        type_uses.add(id(node))


def import_statements(
    source: bytes, roots: frozenset[str], lines: frozenset[int] | None = None
) -> dict[Import, bool]:
    """The imports of ``source`` from the modules ``roots``, wherever they stand (``lines``:
    at these lines only), each with whether it cannot fail (guarded, or never run)."""
    tree = analysable_tree(source)
    if tree is None:
        return {}
    found = _imports_of(tree, roots, lines)
    return {key: guard != _UNGUARDED for key, (_, guard) in found.items()}
