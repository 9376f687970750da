"""Horovod passed as a value (issue 43): ``create_optimizer(loss, lr, hvd=hvd)`` hands the
module Horovod to a function of another module, whose ``hvd.DistributedOptimizer`` and
``hvd.allreduce`` calls are Horovod's as much as the caller's are. program_model.py follows such
a pass one call level (to a function of the project it resolves) and gives the callee's file the
parameter as a name bound to Horovod (tf_files.TfFile.horovod); the caller keeps its import
(its tf.horovod_import row says Horovod is still passed on)."""

from __future__ import annotations

import ast

from ms_fmk_transplt.engine.scope_model import full_name
from ms_fmk_transplt.engine.tree_nodes import tree_nodes
from ms_fmk_transplt.tables.tf_migration_table import TfMigrationTable

# (callee as its file names it, resolved through its imports: "optimization.create_optimizer",
# ".model.build", or a function of the file itself: "create_optimizer"; "?obj.method": no
# function of the project the model can resolve), the argument's
# position (-1: given by keyword), the keyword, Horovod's kind ("tf1" / "keras"), the line
Pass = tuple[str, int, str, str, int]


def horovod_names(bound: dict[str, str], table: TfMigrationTable) -> dict[str, str]:
    """The names the module's imports bind to Horovod's TensorFlow modules -> their kind."""
    found = {}
    for name, path in bound.items():
        kind = table.horovod_modules.get(path)
        if kind is not None:
            found[name] = kind
    return found


def horovod_passes(tree: ast.Module, bound: dict[str, str], table: TfMigrationTable) -> list[Pass]:
    """Each use of a name bound to Horovod as a value: an argument of a call (``f(hvd=hvd)``,
    ``f(hvd if flag else None)``: followed to the callee), and any other read that is not an
    attribute of it (``self.hvd = hvd``, ``wrapper = hvd``: ``"?="``, the import stays)."""
    horovod = horovod_names(bound, table)
    if not horovod:
        return []
    passes: list[Pass] = []
    arguments: set[int] = set()  # the names passed as arguments, recorded with their call
    for node in tree_nodes(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = _callee(node.func, bound) or "?" + (full_name(node.func) or "call")
        for position, arg in enumerate(node.args):
            if isinstance(arg, ast.Starred):
                break
            name = _horovod_value(arg, horovod)
            if name is not None:
                arguments.add(id(name))
                passes.append((callee, position, "", horovod[name.id], node.lineno))
        for keyword in node.keywords:
            name = _horovod_value(keyword.value, horovod) if keyword.arg else None
            if keyword.arg and name is not None:
                arguments.add(id(name))
                passes.append((callee, -1, keyword.arg, horovod[name.id], node.lineno))
    for node in tree_nodes(tree):
        for child in ast.iter_child_nodes(node):
            if (
                isinstance(child, ast.Name)
                and child.id in horovod
                and isinstance(child.ctx, ast.Load)
                and id(child) not in arguments
                and not (isinstance(node, ast.Attribute) and node.value is child)
            ):
                passes.append(("?=", -1, "", horovod[child.id], child.lineno))
    return passes


def _horovod_value(node: ast.expr, horovod: dict[str, str]) -> ast.Name | None:
    """The Horovod name an argument is, or one arm of a conditional argument is
    (``hvd if use_horovod else None``)."""
    if isinstance(node, ast.IfExp):
        return _horovod_value(node.body, horovod) or _horovod_value(node.orelse, horovod)
    return node if isinstance(node, ast.Name) and node.id in horovod else None


def _callee(func: ast.expr, bound: dict[str, str]) -> str:
    """``mod.f`` / ``f`` resolved through the imports ("" for anything else: a method)."""
    if isinstance(func, ast.Name):
        return bound.get(func.id, func.id)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        path = bound.get(func.value.id)
        return f"{path}.{func.attr}" if path else ""
    return ""


def module_functions(tree: ast.Module) -> dict[str, list[str]]:
    """The module-level functions -> their parameters: the positional ones in order, then
    ``*``, then the keyword-only ones."""
    found = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = stmt.args
            positional = [a.arg for a in (*args.posonlyargs, *args.args)]
            found[stmt.name] = [*positional, "*", *(a.arg for a in args.kwonlyargs)]
    return found


def receiving_parameter(parameters: list[str], position: int, keyword: str) -> str:
    """The parameter an argument lands in ("" when none does)."""
    if position >= 0:
        return parameters[position] if position < parameters.index("*") else ""
    return keyword if keyword in parameters and keyword != "*" else ""
