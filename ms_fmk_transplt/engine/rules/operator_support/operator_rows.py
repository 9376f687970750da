"""PyTorch APIs the target torch_npu documents as unsupported or restricted (rules
operator_support.unsupported and operator_support.restricted; data:
rules/operator_support/<X.Y.Z>.json, rebuilt from torch_npu's public API support lists by
scripts/build_operator_support.py).

Nothing is rewritten: each use becomes a row of unsupported_op.xlsx with the documented
restriction as its tip. An unsupported API is reported at every use (a call, or a reference such
as ``fn = torch.cdist``); a restricted one only at calls that pass one of the keyword arguments
its restriction is about (``F.interpolate(x, mode="bicubic")``), since the documentation
restricts argument values, not the API. Names are resolved through imports
(``import torch.nn.functional as F``, ``from torch import cdist``). Opt out on a line with
``# msft: ignore[operator_support.unsupported]``.
"""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.rules.family_spec import Folding
from ms_fmk_transplt.events import Notice, Severity
from ms_fmk_transplt.tables import Tables

_SOURCE = (
    " The list is torch_npu's public API-support documentation of the `-v` target version "
    "(rules/operator_support/<version>.json, rebuilt by scripts/build_operator_support.py; a "
    "version without a published list uses the nearest older one). Nothing is rewritten."
)
RULES = {
    "unsupported_op": declare(
        "operator_support.unsupported",
        "a PyTorch API the target torch_npu documents as unsupported: one row per file and API",
        "An API the target's API-support list marks unsupported fails or falls back on the NPU. "
        "It is reported at every use, a call or a reference (`fn = torch.cdist`), names resolved "
        "through imports; the tip gives the documented note. The uses of one API in one file "
        "are one row listing their lines." + _SOURCE,
        kind=OPEN_WORK,
    ),
    "restricted_op": declare(
        "operator_support.restricted",
        "a PyTorch API called with an argument the target torch_npu restricts: one row per file "
        "and API",
        "The documentation restricts argument values of some APIs (`F.interpolate(mode=...)`, "
        "...), not the API itself, so only calls passing one of the keyword arguments the "
        "restriction is about are reported; the tip quotes the restriction. The calls of one "
        "API in one file (`F.kl_div(..., log_target=True)` in four losses) are one row listing "
        "their lines." + _SOURCE,
        kind=OPEN_WORK,
    ),
}


def operator_notice(
    tables: Tables, path: str, node: ast.expr, qualified: str, call: ast.Call | None
) -> Notice | None:
    ops = tables.operators
    entry = ops.entry(qualified)
    if entry is None:
        return None
    if entry.category == "restricted_op":
        used = [k.arg for k in call.keywords if k.arg in entry.keywords] if call else []
        if not used:
            return None
        what = f"called with {', '.join(f'{k}=' for k in used)}: restricted"
    else:
        what = "not supported"
    line, end = node.lineno, getattr(node, "end_lineno", None) or node.lineno
    if call is not None:
        end = call.end_lineno or end
    return Notice(
        path,
        line,
        RULES[entry.category],
        Severity.WARNING,
        f"{qualified}: {what} on the NPU by torch_npu {ops.document_version}'s documentation",
        api=qualified,
        category=entry.category,
        action="manual",
        tip=entry.tip,
        end_line=end,
    )


def fold(notices: list[Notice], done: Folding) -> list[Notice]:
    """The family's rows folded (Family.fold): one row per file, API and action (the same loss
    copied into four methods of a trainer is one row listing its lines)."""
    # (imported here: the target scan, which declares this family's rules, runs on files the
    # span pass never sees, and those rows fold like the libraries family's)
    from ms_fmk_transplt.engine.rules.libraries.library_rows import fold_rows_per_api

    return fold_rows_per_api(notices, frozenset(r for r in RULES.values()), done.migrated)
