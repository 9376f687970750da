"""The operator table of the target version (tables/target_tables.py) in the form kit assess's
runtime reads (msft_ops.json, report/kit_assess.py) and ``--assessed`` judges ops.csv's rows
with (engine/rules/assess/):

``{API: {"status", "restriction", "dtypes", "arguments"}}``

API as the operator table names it (``torch.nn.functional.interpolate``); status ``unsupported``
or ``restricted`` (an API the table does not list is supported: it is not in the view);
restriction the table's text; dtypes the torch dtype names (``float32``) the table allows for the
API's tensor input, null when it names none; arguments each keyword the table restricts, with
the part of the text that says how."""

from __future__ import annotations

import re
from typing import Any

from ms_fmk_transplt.tables.target_tables import OperatorEntry, OperatorTable

_STATUS = {"unsupported_op": "unsupported", "restricted_op": "restricted"}
_RESTRICTED = "restricted on the NPU: "
# the operator lists' dtype words, as torch names its dtypes (torch.float32 -> "float32")
_DTYPES = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp32": "float32",
    "fp64": "float64",
    "complex64": "complex64",
    "complex128": "complex128",
    "uint8": "uint8",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "bool": "bool",
}
# "`input`: bf16, fp16, fp32 only" (newer lists), "supported dtypes: fp16, fp32" (older ones)
_DTYPE_CLAUSE = re.compile(r"(?:`\w+`: ([\w ,]+) only|supported dtypes: ([\w ,]+))")


def operator_support(table: OperatorTable) -> dict[str, Any]:
    """``table`` (the run's target version) as the runtime reads it: API -> its entry."""
    return {api: _api(entry) for api, entry in sorted(table.entries.items())}


def support_entry(table: OperatorTable, api: str) -> dict[str, Any] | None:
    """The view of one API's entry; None: the table does not list it (supported)."""
    entry = table.entry(api)
    return None if entry is None else _api(entry)


def _api(entry: OperatorEntry) -> dict[str, Any]:
    restriction = entry.tip.removeprefix(_RESTRICTED)
    clauses = restriction.split("; ")
    return {
        "status": _STATUS.get(entry.category, "unsupported"),
        "restriction": restriction,
        "dtypes": _dtypes(clauses) if entry.category == "restricted_op" else None,
        "arguments": {kw: _about(kw, clauses, restriction) for kw in sorted(entry.keywords)},
    }


def _dtypes(clauses: list[str]) -> list[str] | None:
    """The dtypes a restricted API's tensor input takes (the first clause that lists only
    dtype words); None when the text names none."""
    for clause in clauses:
        match = _DTYPE_CLAUSE.fullmatch(clause.strip())
        if match:
            words = [w.strip() for w in (match.group(1) or match.group(2)).split(",")]
            if words and all(w in _DTYPES for w in words):
                return [_DTYPES[w] for w in words]
    return None


def _about(keyword: str, clauses: list[str], restriction: str) -> str:
    """The clauses of the restriction that name ``keyword`` (all of it when none does)."""
    named = re.compile(rf"(?<![\w.]){re.escape(keyword)}(?!\w)")
    found = [c for c in clauses if named.search(c)]
    return "; ".join(found) if found else restriction
