"""OpenMMLab config files (mmcv / mmengine): Python modules of plain settings
(``dist_params = dict(backend="nccl")``) that ``Config.fromfile`` executes and turns into a config,
one entry per module-level name. Their values are migrated like any others, but no ``import
torch_npu`` goes into them: mmcv before 1.5 keeps an imported module as a config entry and then
fails to print or dump the config (which its train scripts do at start-up). The launcher that
reads the config imports torch and is migrated itself."""

from __future__ import annotations

import ast

from ms_fmk_transplt.engine.spans.shared_tree import tree_of

# names only an OpenMMLab config assigns at module level
CONFIG_NAMES = frozenset(
    {
        "_base_",
        "dist_params",
        "log_config",
        "checkpoint_config",
        "optimizer_config",
        "default_hooks",
        "env_cfg",
        "resume_from",
        "workflow",
    }
)
_PLAIN_CALLS = frozenset({"dict", "list", "tuple", "set"})


def is_openmmlab_config(source: bytes) -> bool:
    """Whether the module only assigns plain values and names an OpenMMLab config entry."""
    if not any(name.encode() in source for name in CONFIG_NAMES):
        return False
    try:
        tree = tree_of(source)
    except (SyntaxError, ValueError):
        return False
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring
        if not isinstance(stmt, ast.Assign) or not _plain(stmt.value):
            return False
        names.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
    return bool(names & CONFIG_NAMES)


def _plain(value: ast.expr) -> bool:
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id in _PLAIN_CALLS):
                return False
        elif isinstance(node, (ast.Lambda, ast.Await, ast.Yield, ast.NamedExpr)):
            return False
    return True
