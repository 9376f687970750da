"""msft_assess_report: what ``kit assess``'s recording writes (ops.csv, cuda_calls.csv,
report.html) and the NPU verdict of a recorded API.

Copied next to msft_assess.py into the kit's tree (stdlib only; never imports torch). The tool
imports it too: ``--assessed`` judges ops.csv's rows again with ``npu_verdict`` for the
migration's own target version (engine/assess_facts.py), one verdict for both sides.
"""

from __future__ import annotations

import csv
import html
import json
import os
from typing import Any, Protocol

SHOWN = 8  # distinct shapes shown per API in ops.csv
# ops.csv's columns
FIELDS = ["API", "Calls", "Dtypes", "Arguments", "Shapes", "Dynamic", "NPU", "Where"]
CUDA_FIELDS = ["API", "Calls", "Where"]


class Recorded(Protocol):
    """What the recording knows of one API (``Api``)."""

    calls: int
    dtypes: set[str]
    keywords: set[str]
    steps: dict[int, set[str]]
    where: str

    def shapes(self) -> list[str]: ...

    def dynamic(self) -> bool: ...


# Tensor methods that read metadata or move a value to Python: no kernel runs, nothing
# compiles for a new shape (their shapes are listed, never Dynamic)
_METADATA = frozenset(
    f"torch.Tensor.{name}"
    for name in (
        "size dim numel nelement stride storage_offset element_size is_contiguous data_ptr "
        "get_device is_floating_point is_complex item tolist __len__ __index__ __int__ "
        "__float__ __bool__ __format__ __repr__ __iter__ __hash__ __array__ numpy"
    ).split()
)


class Api:
    """What was recorded for one API (msft_assess.Recorder fills it)."""

    def __init__(self, name: str = "") -> None:
        self.metadata = name in _METADATA
        self.calls = 0
        self.dtypes: set[str] = set()
        self.keywords: set[str] = set()
        self.steps: dict[int, set[str]] = {}
        self.where = ""

    def shapes(self) -> list[str]:
        return list(dict.fromkeys(s for k in sorted(self.steps) for s in sorted(self.steps[k])))

    def dynamic(self) -> bool:
        """A step brings a shape no earlier step had, the API called in an earlier step too
        (its first call, at step 3, is no new shape; a step calling a subset of the shapes, as
        LBFGS's later steps do, compiles nothing new). Step 0 counts as an earlier step; the
        calls before it (the loop's header, its first batch: step -1) never count; an API that
        runs no kernel (``x.size()``, ``x.item()``) is never dynamic."""
        if self.metadata:
            return False
        seen: set[str] = set()
        for step in sorted(k for k in self.steps if k >= 0):
            shapes = self.steps[step]
            if seen and not shapes <= seen:
                return True
            seen |= shapes
        return False


def table(path: str) -> dict[str, Any] | None:
    """msft_ops.json's "apis" (written by ``kit assess`` for the target version); None: absent."""
    try:
        with open(path, encoding="utf-8") as fh:
            apis = json.load(fh).get("apis")
    except (OSError, ValueError, AttributeError):
        return None
    return apis if isinstance(apis, dict) else None


def _kind(dtype: str) -> str:
    for kind in ("complex", "float", "bool", "int"):
        if kind in dtype:
            return kind
    return dtype


def npu_verdict(dtypes: set[str], keywords: set[str], entry: Any) -> str:
    """The NPU column: the table's status; for a restricted API whether the recorded dtypes or
    keyword arguments hit the restriction (only dtypes of a kind the table lists count: an
    int64 index does not hit a float16/float32 list). msft_ops.json lists the APIs the target
    version documents as unsupported or restricted: any other is supported."""
    if not isinstance(entry, dict):
        return "supported"
    status = str(entry.get("status", "unknown"))
    if status != "restricted":
        return status
    hits = [key for key in entry.get("arguments") or {} if key in keywords]
    allowed = entry.get("dtypes")
    if allowed:
        kinds = {_kind(d) for d in allowed}
        hits += [f"dtype {d}" for d in sorted(dtypes) if d not in allowed and _kind(d) in kinds]
    text = f"restricted (hit: {', '.join(hits)})" if hits else "restricted (not hit)"
    restriction = str(entry.get("restriction") or "")
    return f"{text}: {restriction}" if restriction else text


def flagged(verdict: str) -> bool:
    """Unsupported, or restricted with the recorded arguments hitting the restriction."""
    return verdict == "unsupported" or verdict.startswith("restricted (hit")


def _shapes_cell(api: Recorded) -> str:
    shapes = api.shapes()
    more = len(shapes) - SHOWN
    cell = "; ".join(f"[{shape}]" for shape in shapes[:SHOWN])
    return f"{cell}; ... (+{more} more)" if more > 0 else cell


def rows(apis: dict[str, Recorded], support: dict[str, Any] | None) -> list[dict[str, str]]:
    order = sorted(apis.items(), key=lambda kv: (not kv[1].dynamic(), -kv[1].calls, kv[0]))
    return [
        {
            "API": name,
            "Calls": str(api.calls),
            "Dtypes": ", ".join(sorted(api.dtypes)),
            "Arguments": ", ".join(sorted(api.keywords)),
            "Shapes": _shapes_cell(api),
            "Dynamic": "yes" if api.dynamic() else "no",
            "NPU": "unknown"
            if support is None
            else npu_verdict(api.dtypes, api.keywords, support.get(name)),
            "Where": api.where,
        }
        for name, api in order
    ]


def _csv(path: str, fields: list[str], rows: list[dict[str, str]]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def _html_table(fields: list[str], rows: list[dict[str, str]]) -> str:
    head = "".join(f"<th>{html.escape(f)}</th>" for f in fields)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(row[f])}</td>" for f in fields) + "</tr>\n"
        for row in rows
    )
    return f"<table>\n<tr>{head}</tr>\n{body}</table>\n"


def _html(
    apis: dict[str, Recorded], rows: list[dict[str, str]], title: str, cuda: list[dict[str, str]]
) -> str:
    dynamic = [
        {
            "API": row["API"],
            "NPU": row["NPU"],
            "Step": str(step) if step >= 0 else "before 0",
            "Shapes": "; ".join(sorted(shapes)),
        }
        for row in rows
        if row["Dynamic"] == "yes"
        for step, shapes in sorted(apis[row["API"]].steps.items())
    ]
    hit = [r for r in rows if flagged(r["NPU"])]
    rest = [r for r in rows if r["Dynamic"] == "no" and r not in hit]
    parts = [
        ("Dynamic shapes (per step)", _html_table(["API", "NPU", "Step", "Shapes"], dynamic)),
        ("Unsupported, or restricted and hit, on the NPU", _html_table(FIELDS, hit)),
        ("The other APIs", _html_table(FIELDS, rest)),
        ("torch.cuda calls", _html_table(CUDA_FIELDS, cuda)),
    ]
    style = "table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 6px}"
    body = "".join(f"<h2>{html.escape(name)}</h2>\n{table}" for name, table in parts)
    title = html.escape(title)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{style}</style></head>\n<body><h1>{title}</h1>\n{body}</body></html>\n"
    )


def write(
    folder: str,
    apis: dict[str, Recorded],
    cuda: dict[str, tuple[list[int], dict[str, None]]],
    support: dict[str, Any] | None,
    steps: str,
    early: str = "",
) -> str:
    """ops.csv, cuda_calls.csv and report.html into ``folder``; the summary line. ``steps``:
    what was recorded, as the summary says it ("5 steps"); ``early``: why fewer steps than
    asked ("the loop ended before step 2 of the 5 asked")."""
    found = rows(apis, support)
    cuda_rows = [
        {"API": name, "Calls": str(counts[0]), "Where": "; ".join(sites)}
        for name, (counts, sites) in sorted(cuda.items(), key=lambda kv: (-kv[1][0][0], kv[0]))
    ]
    _csv(os.path.join(folder, "ops.csv"), FIELDS, found)
    _csv(os.path.join(folder, "cuda_calls.csv"), CUDA_FIELDS, cuda_rows)
    apis_text = f"{len(found)} API{'' if len(found) == 1 else 's'}"
    title = f"kit assess: {apis_text} in {steps}" + (f" ({early})" if early else "")
    with open(os.path.join(folder, "report.html"), "w", encoding="utf-8") as fh:
        fh.write(_html(apis, found, title, cuda_rows))
    dynamic = sum(r["Dynamic"] == "yes" for r in found)
    unsupported = sum(r["NPU"] == "unsupported" for r in found)
    hit = sum(r["NPU"].startswith("restricted (hit") for r in found)
    shown = os.path.relpath(os.path.join(folder, "ops.csv"))
    if shown.startswith(".."):
        shown = os.path.join(folder, "ops.csv")
    return (
        f"assess: {apis_text} in {steps} ({dynamic} with dynamic shapes, "
        f"{unsupported} unsupported, {hit} restricted and hit on the NPU)"
        + (f"; {early}" if early else "")
        + f": {shown}"
    )
