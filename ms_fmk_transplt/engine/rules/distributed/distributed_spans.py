"""Span pass: ``"nccl"`` -> ``"hccl"``, ``"cpu:gloo,cuda:nccl"`` -> ``"cpu:gloo,npu:hccl"``,
``Backend.NCCL`` -> ``Backend.HCCL`` (rules distributed.*, declared here)."""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import declare
from ms_fmk_transplt.engine.rules.distributed.backends import compound
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext, StringPart

NCCL_BACKEND = declare(
    "distributed.nccl_backend",
    'the collective backend `"nccl"` -> `"hccl"`',
    "NCCL is NVIDIA's collective library; on Ascend the process group uses HCCL. The literal "
    '`"nccl"` is a backend name wherever it appears (`init_process_group(backend=...)`, argparse '
    'defaults and choices, comparisons with `dist.get_backend()`), so it becomes `"hccl"` '
    "everywhere to keep values consistent.",
)
COMPOUND_BACKEND = declare(
    "distributed.compound_backend",
    'per-device backend strings: `"cpu:gloo,cuda:nccl"` -> `"cpu:gloo,npu:hccl"`',
    "torch accepts one backend per device type in a comma list; the CUDA pair becomes the NPU "
    "pair and the other pairs are kept.",
)
NCCL_AVAILABLE = declare(
    "distributed.is_nccl_available",
    "`dist.is_nccl_available()` -> `dist.is_hccl_available()`",
    'A check for NCCL decides which backend a script uses (`"nccl" if dist.is_nccl_available() '
    'else "gloo"`): on the NPU it is False, so the script would train on gloo. torch_npu '
    'provides `torch.distributed.is_hccl_available()`, asked instead (the `"nccl"` beside it '
    'becomes `"hccl"` by distributed.nccl_backend).',
)
BACKEND_ENUM = declare(
    "distributed.backend_enum",
    "`Backend.NCCL` -> `Backend.HCCL`",
    "The backend enum member names NCCL; torch_npu registers `hccl` as a backend, reachable as "
    "`Backend.HCCL` once torch_npu is imported.",
)


class DistributedSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        table = self.tables.distributed
        self.backend_rule, self.backends = NCCL_BACKEND, table.backends
        self.enum_rule, self.enums, self.enum_leaves = (
            BACKEND_ENUM,
            table.enums,
            table.enum_leaves,
        )
        self.renames = table.renames
        self.compound_rule, self.pairs = COMPOUND_BACKEND, table.pairs

    def _rewrite(self, part: StringPart, body: str, new_body: str, rule: str) -> None:
        before = self.ctx.token_text(part)
        token = part.token
        self.ctx.replace(token.body_start, token.body_end, new_body, expect=body)
        self.ctx.record(
            part.lines, rule, f"backend '{body}' -> '{new_body}'", before, self.ctx.token_text(part)
        )

    def leave_SimpleString(self, part: StringPart) -> None:
        if part.docstring or self.ctx.is_claimed(part.key):
            return
        body = self.ctx.body(part)
        if body is not None and body not in self.backends and ":" in body:
            value = compound(body, self.pairs)
            if value is not None:
                self._rewrite(part, body, value, self.compound_rule)
            return
        if body is None or body not in self.backends:
            return
        self._rewrite(part, body, self.backends[body], self.backend_rule)

    def leave_Attribute(self, node: ast.Attribute) -> None:
        if node.attr not in self.enum_leaves or self.ctx.is_claimed(node):
            return
        qn = self.ctx.qname(node)
        if qn is None:  # (neither table has a None key)
            return
        new_leaf = self.enums.get(qn) or self.renames.get(qn)
        if new_leaf is None:
            return
        before = self.ctx.snippet(node)
        self.ctx.rename_attr(node, new_leaf)
        self.ctx.record(
            self.ctx.lines(node),
            NCCL_AVAILABLE if qn in self.renames else self.enum_rule,
            f"{qn} -> {qn.rsplit('.', 1)[0]}.{new_leaf}",
            before,
            self.ctx.snippet(node),
        )
