"""What a TensorFlow module's code says of the TensorFlow it runs on: the names it uses, resolved
through its imports (never comments, docstrings or parts of other names), against
``rules/tf_migration.json#tf_versions``: a name only TF 1.x has at its top level
(``tf.Session``, ``tf.random_uniform``; through ``tf.compat.v1`` it is no such evidence), a name
that runs TF 1.x graph code (``tf.compat.v1.Session``, ``disable_eager_execution``, Estimators),
a name only TF 2.x has (``tf.summary.create_file_writer``). program_model.py weighs them for
each program; the span pass reads the style it decided (tf_files.py)."""

from __future__ import annotations

import ast

from ms_fmk_transplt.engine.scope_model import full_name
from ms_fmk_transplt.engine.tree_nodes import import_bindings, tree_nodes, walk_nodes
from ms_fmk_transplt.tables.tf_migration_table import TfMigrationTable

Evidence = dict[str, tuple[str, int]]  # kind -> (the first name of that kind, its line)

KINDS = ("tf1_only", "graph_mode", "tf2_only", "script")
_COMPAT = ("tensorflow.compat.v1.", "tensorflow._api.v1.")
_V2 = ("tensorflow.compat.v2.", "tensorflow._api.v2.")


def bindings(tree: ast.Module) -> dict[str, str]:
    """What the module's imports (at any depth) bind each name to (tree_nodes.import_bindings)."""
    return import_bindings(tree_nodes(tree))


_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def guarded_names(tree: ast.Module) -> set[str]:
    """The names bound by imports tried under a handler of ImportError (``try: from
    tensorflow.contrib import x / except ImportError: ...``): code that runs on either
    version, so no evidence of one."""
    names: set[str] = set()
    for node in tree_nodes(tree):
        if isinstance(node, ast.Try) and any(_catches_import(h) for h in node.handlers):
            names.update(import_bindings(walk_nodes(node.body)))
    return names


def _catches_import(handler: ast.ExceptHandler) -> bool:
    caught = handler.type
    if caught is None:
        return True
    items = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return any(isinstance(i, ast.Name) and i.id in _IMPORT_ERRORS for i in items)


def _listed(rest: str, names: tuple[str, ...]) -> bool:
    """``rest`` is a listed name, or inside a listed namespace (an entry ending in ".")."""
    return any(rest.startswith(n) if n.endswith(".") else rest == n for n in names)


def classify(qualified: str, table: TfMigrationTable) -> list[str]:
    """The kinds of evidence a resolved name is (``tensorflow.Session``: tf1_only and
    graph_mode; ``tensorflow.compat.v1.Session``: graph_mode)."""
    lists = table.tf_versions
    if qualified.startswith("tensorflow_estimator."):
        return ["graph_mode"]
    compat = qualified.startswith(_COMPAT)
    if compat:
        rest = qualified.split(".", 3)[3]
    elif qualified.startswith(_V2):
        return []
    elif qualified.startswith("tensorflow."):
        rest = qualified[len("tensorflow.") :]
    else:
        return []
    kinds = []
    if not compat and _listed(rest, lists["tf1_only"]):
        kinds.append("tf1_only")
    if _listed(rest, lists["graph_mode"]):
        kinds.append("graph_mode")
    if not compat and _listed(rest, lists["tf2_only"]):
        kinds.append("tf2_only")
    return kinds


def api_evidence(tree: ast.Module, bound: dict[str, str], table: TfMigrationTable) -> Evidence:
    """Each kind of evidence the module's code holds -> the first name of it (as resolved,
    ``tensorflow.Session``) and its line; ``script``: the line of its first module-level call.
    ``bound``: what its imports bind (bindings)."""
    if not any(path.startswith(("tensorflow", "tf_keras")) for path in bound.values()):
        return {}
    found: Evidence = {}
    guarded = guarded_names(tree)
    for stmt in tree.body:  # module-level calls: a script, run as it is (no __main__ guard)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            found["script"] = ("", stmt.lineno)
            break
    for node in tree_nodes(tree):  # (the list bindings walked already)
        if not isinstance(node, (ast.Attribute, ast.Name)):
            continue
        dotted = full_name(node)
        if not dotted:
            continue
        root, _, rest = dotted.partition(".")
        path = bound.get(root)
        if path is None:
            continue
        qualified = f"{path}.{rest}" if rest else path
        for kind in classify(qualified, table):
            if kind == "tf1_only" and root in guarded:
                continue  # (a fallback import: the code runs where it fails too)
            line = getattr(node, "lineno", 0)
            if kind not in found or line < found[kind][1]:
                found[kind] = (qualified, line)
    return found
