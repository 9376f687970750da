"""Horovod passed as a value (issue 43): ``create_optimizer(loss, lr, hvd=hvd)`` hands the
module Horovod to a function of another module, whose ``hvd.DistributedOptimizer`` and
``hvd.allreduce`` calls are Horovod's as much as the caller's are. program_model.py follows such
a pass one call level (to a function of the project it resolves) and gives the callee's file the
parameter as a name bound to Horovod (tf_files.TfFile.horovod); the caller keeps its import
(its tf.horovod_import row says Horovod is still passed on)."""

from __future__ import annotations

import ast

from ms_fmk_transplt.engine.scope_model import full_name
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
    """Each call of the module that passes a name bound to Horovod as an argument."""
    horovod = horovod_names(bound, table)
    if not horovod:
        return []
    passes: list[Pass] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = _callee(node.func, bound) or "?" + (full_name(node.func) or "call")
        for position, arg in enumerate(node.args):
            if isinstance(arg, ast.Starred):
                break
            if isinstance(arg, ast.Name) and arg.id in horovod:
                passes.append((callee, position, "", horovod[arg.id], node.lineno))
        for keyword in node.keywords:
            value = keyword.value
            if keyword.arg and isinstance(value, ast.Name) and value.id in horovod:
                passes.append((callee, -1, keyword.arg, horovod[value.id], node.lineno))
    return passes


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
