"""Every node of a stdlib tree, in ``ast.walk``'s order, walked once per tree and kept on it:
the whole-file analyses (the CUDA-only names and predicates, the device strings kept beside an
NPU arm, Lightning accelerators) each walked the whole tree with ``ast.walk`` again."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

# leaves ast.walk yields that no analysis asks about (Load/Store, operators)
_SKIP = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
_KEY = "_msft_nodes"  # kept on the tree (not a field: ast.walk and ast.dump never see it)


def walk_nodes(roots: Iterable[ast.AST]) -> list[ast.AST]:
    """The nodes under ``roots`` (included), breadth first in field order as ``ast.walk``
    yields them, without expression contexts and operators. A list and an index instead of
    ast.walk's generators of generators, and each node type's fields that can hold nodes
    looked up once: about twice as fast."""
    found = [r for r in roots if not isinstance(r, _SKIP)]
    append, node_type = found.append, ast.AST
    at = 0
    while at < len(found):
        node = found[at]
        at += 1
        fields = _FIELDS.get(type(node))
        if fields is None:
            fields = _fields(type(node))
        for field in fields:
            value = getattr(node, field, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, node_type):
                        append(item)
            elif isinstance(value, node_type):
                append(value)
    return found


_FIELDS: dict[type, tuple[str, ...]] = {}
_NOT_NODES = frozenset({"ctx", "op", "ops"})  # (expression contexts and operators only)


def _fields(kind: type) -> tuple[str, ...]:
    found = _FIELDS[kind] = tuple(f for f in getattr(kind, "_fields", ()) if f not in _NOT_NODES)
    return found


def tree_nodes(tree: ast.Module) -> list[ast.AST]:
    """The nodes below the module node (walk_nodes, without the module itself: kept on the
    tree, a list holding the tree would be a reference cycle, freed only by the cyclic
    collector), walked on the first call for the tree."""
    found: list[ast.AST] | None = tree.__dict__.get(_KEY)
    if found is None:
        found = tree.__dict__[_KEY] = walk_nodes([tree])[1:]
    return found


def import_bindings(nodes: Iterable[ast.AST]) -> dict[str, str]:
    """What the imports among ``nodes`` (a whole tree's: anywhere in the file) bind each name
    to: ``import a.b`` binds ``a``, ``import a.b as c`` binds ``c`` -> ``a.b``, ``from a import
    b`` binds ``b`` -> ``a.b``; a relative import's path starts with its dots (``from .m import
    f`` -> ``.m.f``); ``*`` binds nothing. A later import of a name wins."""
    bound: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                bound[alias.asname or root] = alias.name if alias.asname else root
        elif isinstance(node, ast.ImportFrom) and (node.module or node.level):
            module = "." * node.level + (node.module or "")
            prefix = module if module.endswith(".") else module + "."
            for alias in node.names:
                if alias.name != "*":
                    bound[alias.asname or alias.name] = prefix + alias.name
    return bound


def module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """A module's statements, also those inside its module-level ``if``/``try``/``with``
    blocks (``if HAS_HELION:`` around kernels and the functions that launch them)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.If, ast.Try, ast.With)):
            for name in ("body", "orelse", "finalbody"):
                yield from module_level(getattr(stmt, name, []))
            for handler in getattr(stmt, "handlers", []):
                yield from module_level(handler.body)
