"""Span pass: import statements of ``torch.cuda`` (rule imports.cuda_module).
``import torch_npu`` is inserted by torch_npu_spans.py."""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import declare
from ms_fmk_transplt.engine.recorder import snippet_of
from ms_fmk_transplt.engine.rules.device_api.no_counterpart import no_npu_counterpart_at
from ms_fmk_transplt.engine.spans.import_tokens import ImportSpans, import_spans
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext

CUDA_MODULE = declare(
    "imports.cuda_module",
    "imports of `torch.cuda` (`import torch.cuda as tc`, `from torch.cuda.amp import autocast`)"
    " -> the `torch.npu` forms",
    "A name imported from `torch.cuda` keeps pointing at CUDA; the import is moved to "
    "`torch.npu` so every later use follows (`from torch import cuda` becomes `from torch import "
    "npu as cuda`, so `cuda.X` keeps working). Names the NPU lacks stay on `torch.cuda` in a "
    "second statement on the same line, and are reported.",
)

CUDA = "torch.cuda"


def _is_cuda(name: str) -> bool:
    return name == CUDA or name.startswith(CUDA + ".")


class ImportsSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        self.rule = CUDA_MODULE

    def _record(self, node: ast.stmt, before: str, message: str) -> None:
        self.ctx.record(
            self.ctx.lines(node), self.rule, message, before, self.ctx.statement_snippet(node)
        )

    def leave_Import(self, node: ast.Import) -> None:
        if not any(_is_cuda(a.name) for a in node.names):
            return
        spans = import_spans(self.ctx.source, node)
        before = self.ctx.statement_snippet(node, updated=False)
        messages = []
        new_names = []
        for alias, where in zip(node.names, spans.aliases):
            new_names.append(alias.name)
            if not _is_cuda(alias.name):
                continue
            mapped = self.tables.lookup_cuda_import(alias.name)
            if mapped is None:
                no_npu_counterpart_at(self.ctx, where.lines, alias.name, "import left")
                continue
            self.ctx.replace(*where.name, mapped[0], checked=True)  # dotted name by dotted name
            new_names[-1] = mapped[0]
            messages.append(f"import {alias.name} -> import {mapped[0]}")
        if messages:
            self.ctx.updated_imports[(node.lineno, node.col_offset)] = (None, new_names)
            self._record(node, before, "; ".join(messages))

    def leave_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or node.module is None:
            return
        module = node.module
        if module == "torch":
            self._from_torch(node)
            return
        if not _is_cuda(module):
            return
        mapped_module = self.tables.lookup_cuda(module)
        if mapped_module is None:
            no_npu_counterpart_at(self.ctx, self.ctx.lines(node), module, "import left")
            return
        npu_module = mapped_module[0]
        spans = import_spans(self.ctx.source, node)
        assert spans.module is not None
        before = self.ctx.statement_snippet(node, updated=False)
        names = [a.name for a in node.names]
        if names == ["*"]:
            self.ctx.replace(*spans.module, npu_module, checked=True)
            self.ctx.updated_imports[(node.lineno, node.col_offset)] = (npu_module, names)
            self._record(node, before, f"from {module} import * -> from {npu_module} import *")
            return
        supported = unsupported = 0
        for alias, where in zip(node.names, spans.aliases):
            full = f"{module}.{alias.name}"
            if self.tables.lookup_cuda_import(full):
                supported += 1
            else:
                unsupported += 1
                no_npu_counterpart_at(self.ctx, where.lines, full, "import left")
        if not supported:
            return
        if unsupported:
            self._split(node, spans, npu_module, before)
            return
        self.ctx.replace(*spans.module, npu_module, checked=True)
        self.ctx.updated_imports[(node.lineno, node.col_offset)] = (npu_module, names)
        self._record(node, before, f"from {module} import ... -> from {npu_module} import ...")

    def _split(
        self, node: ast.ImportFrom, spans: ImportSpans, npu_module: str, before: str
    ) -> None:
        """``from torch.cuda import a, b`` where torch_npu has ``a`` only: ``from torch.npu import
        a; from torch.cuda import b`` on the same line, printed as two statements (no
        parentheses, ``", "`` between names, the ``;`` of the statement after each if it has
        one)."""
        assert node.module is not None and spans.module is not None
        module, data = node.module, self.ctx.source.data
        start, end = self.ctx.source.span(node)
        names_start = spans.aliases[0].name[0]
        if data[start:names_start].rstrip().endswith(b"("):
            names_start = start + data[start:names_start].rstrip().rindex(b"(")
        npu: list[str] = []
        cuda: list[str] = []
        for alias, where in zip(node.names, spans.aliases):
            text = data[where.name[0] : (where.asname or where.name)[1]].decode("utf-8")
            supported = self.tables.lookup_cuda_import(f"{module}.{alias.name}")
            (npu if supported else cuda).append(text)
        head = data[start:names_start].decode("utf-8")
        module_at = spans.module[0] - start, spans.module[1] - start
        npu_part = head[: module_at[0]] + npu_module + head[module_at[1] :] + ", ".join(npu)
        cuda_part = head + ", ".join(cuda)
        semicolon = _semicolon_after(data, end)
        # (from the module on: an `import torch_npu` may go in front of the statement)
        new = f"{npu_part}{semicolon or '; '}{cuda_part}"[module_at[0] :]
        self.ctx.replace(spans.module[0], end, new)
        names = [a.name for a in node.names]
        self.ctx.updated_imports[(node.lineno, node.col_offset)] = (npu_module, names)
        end_mark = semicolon or ""  # each part is printed with the statement's ";"
        self.ctx.record(
            self.ctx.lines(node),
            self.rule,
            f"from {module} import: names torch_npu provides now come from {npu_module}",
            before,
            f"{snippet_of(npu_part + end_mark)}; {snippet_of(cuda_part + end_mark)}",
        )

    def _from_torch(self, node: ast.ImportFrom) -> None:
        if node.names[0].name == "*" or not any(a.name == "cuda" for a in node.names):
            return
        spans = import_spans(self.ctx.source, node)
        before = self.ctx.statement_snippet(node, updated=False)
        names = []
        for alias, where in zip(node.names, spans.aliases):
            if alias.name != "cuda":
                names.append(alias.name)
                continue
            self.ctx.replace(*where.name, "npu" if alias.asname else "npu as cuda", "cuda")
            names.append("npu")
        self.ctx.updated_imports[(node.lineno, node.col_offset)] = ("torch", names)
        self._record(node, before, "from torch import cuda -> from torch import npu as cuda")


def _semicolon_after(data: bytes, end: int) -> str | None:
    """The ``;`` that follows a simple statement, with the spaces around it, if any."""
    i = end
    while i < len(data) and data[i] in b" \t":
        i += 1
    if data[i : i + 1] != b";":
        return None
    j = i + 1
    while j < len(data) and data[j] in b" \t":
        j += 1
    return data[end:j].decode("utf-8")
