"""Span pass: CUDA capability probes stay on ``torch.cuda`` (rule device_api.capability_probe);
the LibCST counterpart is engine/capability.py.

``torch.cuda.get_device_capability()`` and ``torch.cuda.get_device_properties(i).major`` & co.
ask "which NVIDIA GPU is this?". torch_npu's ``get_device_capability`` warns and returns None, so a
migrated ``torch.npu.is_available() and torch.npu.get_device_capability() >= (9, 0)`` is true on
the NPU up to the comparison, which then raises TypeError. Left on ``torch.cuda`` -- the whole
boolean or comparison around the probe, ``is_available()`` included -- the probe is False on an
NPU host and the code takes its non-NVIDIA path, which runs on the NPU.
"""

from __future__ import annotations

import ast

from ms_fmk_transplt.engine.spans.base import SpanConcern
from ms_fmk_transplt.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.unsupported_table import Entry

# always a probe: which NVIDIA architecture / NCCL build is this?
PROBES = frozenset({"torch.cuda.get_device_capability", "torch.cuda.nccl.version"})
PROPERTIES = "torch.cuda.get_device_properties"  # a probe when asked for one of PROBE_FIELDS
PROBE_FIELDS = frozenset({"major", "minor", "multi_processor_count", "gcnArchName"})
CATEGORY = "capability_probe"
TIP = (
    "kept on torch.cuda: on an NPU host torch.cuda.is_available() is False, so this code takes "
    "its non-NVIDIA path; check that path suits the NPU (torch_npu's get_device_capability "
    "returns None, get_device_properties has no major/minor)"
)
RULE = declare(
    "device_api.capability_probe",
    "a CUDA capability probe (`get_device_capability`, `get_device_properties(i).major`) stays "
    "on torch.cuda, with a caveat row",
    "Code that asks which NVIDIA architecture it runs on (`get_device_capability() >= (9, 0)`, "
    "`get_device_properties(i).major`, `.multi_processor_count`, `.gcnArchName`) or "
    "which NCCL it has (`torch.cuda.nccl.version()`) selects "
    "NVIDIA-only paths. Migrated to `torch.npu`, the probe would return None or lack the field "
    "and raise; so the smallest boolean or comparison holding the probe is left entirely on "
    "`torch.cuda` (its `is_available()` included), which is False on an NPU host: the non-NVIDIA "
    "branch runs. Each probe is a `caveat` row (category `capability_probe`) so you check that "
    "branch; a probe its expression does not guard with `torch.cuda.is_available()` raises on an "
    "NPU host and is a `manual` row.",
    kind=OPEN_WORK,
)
ENTRY = Entry("torch.cuda.get_device_capability", CATEGORY, "caveat", TIP)
UNGUARDED = Entry(
    "torch.cuda.get_device_capability",
    CATEGORY,
    "manual",
    "kept on torch.cuda, but nothing here checks torch.cuda.is_available() first: on an NPU host "
    "this call raises (no CUDA device); guard it (`torch.cuda.is_available() and ...`) so the "
    "non-NVIDIA path runs",
)
AVAILABLE = "torch.cuda.is_available"


def hinted(source: bytes) -> bool:
    """Cheap test: could the file hold a probe at all (most files have none)?"""
    return b"get_device_" in source or b"nccl.version" in source


def entry_for(nodes, qname) -> Entry:
    """Caveat when the probe's expression checks torch.cuda.is_available() first, else manual."""
    calls = [n for n in nodes if type(n).__name__ == "Call"]
    guarded = any((qname(c.func) or "") == AVAILABLE for c in calls)
    return ENTRY if guarded else UNGUARDED


def probe_calls(nodes, qname) -> list:
    """The probe calls among ``nodes`` (either tree; qname: the pass's name resolution):
    ``get_device_capability(...)`` and ``get_device_properties(...)`` read for an
    architecture field (``.major``; not ``.total_memory``, which the NPU has)."""
    found = []
    for n in nodes:
        kind = type(n).__name__
        if kind == "Call" and (qname(n.func) or "") in PROBES:
            found.append(n)
        elif kind == "Attribute" and getattr(n.attr, "value", n.attr) in PROBE_FIELDS:
            inner = n.value
            if type(inner).__name__ == "Call" and (qname(inner.func) or "") == PROPERTIES:
                found.append(inner)
    return found


def keep_probes(ctx, nodes: list, where) -> None:
    """If ``nodes`` (an expression and everything in it) hold a probe: claim them all, so no
    other rule migrates any of it, and record a row per probe (``where(call)``: its position
    as the pass's context takes it)."""
    found = probe_calls(nodes, ctx.qname)
    if not found:
        return
    for inner in nodes:
        ctx.claim(inner)
    entry = entry_for(nodes, ctx.qname)
    for call in found:
        api = ctx.qname(call.func) or ""
        message = f"{api}: CUDA capability probe kept on torch.cuda"
        ctx.unsupported(where(call), api, entry, message, RULE)


class CapabilitySpans(SpanConcern):
    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.active = hinted(ctx.source.data)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        self._keep(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        self._keep(node)

    def visit_Call(self, node: ast.Call) -> None:
        self._keep(node)

    def _keep(self, node: ast.AST) -> None:
        if self.active and not self.ctx.is_claimed(node):
            keep_probes(self.ctx, list(ast.walk(node)), self.ctx.lines)
