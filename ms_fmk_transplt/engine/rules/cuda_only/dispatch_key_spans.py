"""Span pass: operator kernels registered for a CUDA dispatch key (rule cuda_only.dispatch_key).

``torch.library.impl(lib, "dispatch", "CUDA")`` and ``lib.impl("bmm", kernel, "CUDA")``
register a kernel for the CUDA dispatch key only. On the NPU, tensors dispatch to
``PrivateUse1``: the operator has no kernel there (or, for an ``aten`` override, the override is
silently not applied). The string is a dispatch key, not a device, and the kernel is often
CUDA-only code (Triton, NVSHMEM), so nothing is rewritten: each registration is a manual row.
"""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.tables.unsupported_table import Entry

RULE = declare(
    "cuda_only.dispatch_key",
    '`torch.library.impl(..., "CUDA")`, `lib.impl(name, fn, "CUDA")`: a kernel registered for '
    "the CUDA dispatch key is left, with a manual row",
    'A kernel registered with `torch.library.impl(lib, "op", "CUDA")` or '
    '`Library.impl("op", fn, "CUDA")` (also `AutogradCUDA` and the other CUDA keys) runs only '
    "for CUDA tensors. On the NPU, tensors dispatch to the `PrivateUse1` key, so the operator "
    "has no kernel there -- or an `aten` override is silently not applied. The key is not a "
    "device string and the registered kernel is often CUDA-only code, so it is left as it is "
    'and reported: if the kernel is plain torch code, register it for `"PrivateUse1"` too; '
    "otherwise register an NPU implementation (Ascend C, triton-ascend).",
    kind=OPEN_WORK,
)
KEYS = frozenset(
    {"CUDA", "AutogradCUDA", "SparseCUDA", "QuantizedCUDA", "NestedTensorCUDA", "SparseCsrCUDA"}
)
ENTRY = Entry(
    "dispatch key CUDA",
    "custom_cuda_code",
    "manual",
    "kernel registered for a CUDA dispatch key only: NPU tensors dispatch to PrivateUse1, where "
    'this operator has no kernel; register it for "PrivateUse1" if its code runs on the NPU, '
    "or write an NPU kernel",
)
REGISTRARS = frozenset({"impl", "impl_abstract"})


def hinted(source: bytes) -> bool:
    return b"CUDA" in source and b"impl" in source


def message(key: str) -> str:
    return f'kernel registered for dispatch key "{key}" only: no kernel for the NPU (PrivateUse1)'


def registered_key(values: list[object]) -> str | None:
    """The CUDA dispatch key among a registration's argument values (plain strings)."""
    for value in values:
        if isinstance(value, str) and value in KEYS:
            return value
    return None


def registrar(qualified: str | None) -> str:
    """The API a row names: ``torch.library.impl``, else the method of a Library object."""
    return qualified if qualified and qualified.startswith("torch.") else "Library.impl"


class DispatchKeySpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        self.active = hinted(ctx.source.data)

    def visit_Call(self, node: ast.Call) -> None:
        if not self.active or self.ctx.last_name(node.func) not in REGISTRARS:
            return
        args = [*node.args, *(k.value for k in node.keywords)]
        key = registered_key([a.value for a in args if isinstance(a, ast.Constant)])
        if key is not None:
            api = registrar(self.ctx.qname(node.func))
            self.ctx.unsupported(self.ctx.lines(node), api, ENTRY, message(key), RULE)
