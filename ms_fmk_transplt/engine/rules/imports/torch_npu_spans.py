"""Span pass: ``import torch_npu`` inserted once into every file the pass changed (rule
imports.torch_npu): after the first module-level torch import, before it when that import itself
needs torch.npu, else after the module docstring and ``from __future__`` imports."""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import INSERTED_LINES, declare
from ms_fmk_transplt.engine.config_module import is_openmmlab_config
from ms_fmk_transplt.engine.rules.family_spec import Finishing
from ms_fmk_transplt.engine.spans.module_facts import Line, ModuleFacts
from ms_fmk_transplt.engine.spans.span_context import SpanContext

TORCH_NPU = declare(
    "imports.torch_npu",
    "`import torch_npu` inserted once into every changed file",
    "Importing torch_npu registers the NPU device, the `torch.npu` namespace and the `hccl` "
    "backend with torch; a migrated file that names them needs it. It is placed after the first "
    "module-level torch import, before it when that import itself needs `torch.npu`, else after "
    "the module docstring and `from __future__` imports, and never duplicated. It is bookkeeping, "
    "not a CUDA construct of your code, so the conversion rate does not count it. Files whose "
    "only changes are environment keys (environment.ascend_variable) or comments get none.",
    bookkeeping=True,
    fixed=INSERTED_LINES,
)


class TorchNpuInsert:
    """Inserts ``import torch_npu`` once the pass over a file is done."""

    def __init__(self, ctx: SpanContext, facts: ModuleFacts) -> None:
        self.ctx = ctx
        self.lines = facts.lines
        self.rule = TORCH_NPU
        self.statement = ctx.tables.imports.torch_npu_statement

    def _names(self, node: ast.Import | ast.ImportFrom) -> tuple[str | None, list[str]]:
        """(module, names) of an import as it reads after this pass's rewrites."""
        updated = self.ctx.updated_imports.get((node.lineno, node.col_offset))
        if updated is not None:
            return updated
        module = node.module if isinstance(node, ast.ImportFrom) else None
        return module, [a.name for a in node.names]

    def _root_is(self, node: ast.Import | ast.ImportFrom, root: str) -> bool:
        module, names = self._names(node)
        if isinstance(node, ast.Import):
            return any(n.split(".")[0] == root for n in names)
        return not node.level and module is not None and module.split(".")[0] == root

    def _needs_npu(self, node: ast.Import | ast.ImportFrom) -> bool:
        module, names = self._names(node)
        if isinstance(node, ast.Import):
            return any(n.startswith("torch.npu") for n in names)
        if node.level or module is None:
            return False
        if module.startswith("torch.npu"):
            return True
        return module == "torch" and names != ["*"] and "npu" in names

    def run(self, changed: bool | None = None) -> None:
        """``import torch_npu`` at its place (see the module docstring), and the options'
        helper lines (with ``import os`` when the module has not imported it yet) after the
        import block that follows it. ``changed``: whether the file was changed (default:
        this pass changed it)."""
        ctx = self.ctx
        changed = bool(ctx.events) if changed is None else changed
        lines = self.lines
        present = next((i for i, line in enumerate(lines) if self._imports_torch_npu(line)), None)
        wanted = ctx.options.insert_torch_npu and not is_openmmlab_config(ctx.source.data)
        groups: list[tuple[int, bool, list[tuple[str, str, str]]]] = []
        if changed and ctx.needs_torch_npu and present is None and wanted:
            index, before = self._insertion_point(lines)
            message = "import torch_npu inserted (registers the NPU device with torch)"
            groups.append((index, before, [(self.statement, self.rule, message)]))
            after_npu = index
        elif ctx.helper_lines:
            after_npu = present + 1 if present is not None else self._insertion_point(lines)[0]
        else:
            return
        if ctx.helper_lines:
            helpers = list(ctx.helper_lines)
            index = after_npu
            while index < len(lines) and lines[index].import_only:
                index += 1
            if "os" not in self._bound_before(index):
                helpers.insert(0, ("import os", helpers[0][1], "import os for the helpers below"))
            if groups and groups[0][0] == index:
                groups[0][2].extend(helpers)
            else:
                groups.append((index, False, helpers))
        for index, before, inserted in sorted(groups, key=lambda g: g[0], reverse=True):
            self._insert(index, before, inserted)

    def _insert(self, index: int, before: bool, inserted: list[tuple[str, str, str]]) -> None:
        """Lines of their own at a statement boundary of the module: after statement
        ``index - 1`` (unless ``before``), else before statement ``index``."""
        ctx, lines = self.ctx, self.lines
        if index > 0 and not before:
            last = lines[index - 1].last
            offset, anchor = ctx.source.line_end(last), last + 1
        elif index < len(lines):
            line = lines[index]
            # above a decorated definition's decorators (the row names the line of its def)
            first = line.decorator_line or line.first
            offset, anchor = ctx.source.starts[first - 1], line.first
        else:
            last = lines[-1].last
            offset, anchor = ctx.source.line_end(last), last + 1
        texts = [
            "\n\n" + code if code.startswith(("def ", "class ")) else code  # two blank lines above
            for code, _, _ in inserted
        ]
        newline = ctx.source.newline
        text = "".join(t.replace("\n", newline) + newline for t in texts)
        data = ctx.source.data
        if offset == len(data) and not data.endswith(b"\n"):
            text = newline + text[: -len(newline)]  # the last line gets its line break instead
        elif not before and ctx.edits.rewrites_from(offset):
            # the next line is rewritten from its first byte (hvd.init() right below the
            # import): the lines go before the line break that ends the line above instead
            # (lines only inserted there, import torch_npu above the adapter's, stay above)
            offset -= len(newline.encode())
            text = newline + text[: -len(newline)]
        ctx.replace(offset, offset, text, checked=True)
        for code, (_, rule, message) in zip(texts, inserted):
            ctx.record_insert(anchor, rule, message, code, first=True)

    def _imports_torch_npu(self, line: Line) -> bool:
        return any(self._root_is(n, "torch_npu") for n in line.imports)

    def _bound_before(self, index: int) -> set[str]:
        """Names bound by module-level ``import`` statements among the first ``index`` lines."""
        names: set[str] = set()
        for line in self.lines[:index]:
            for node in line.imports:
                if isinstance(node, ast.Import):
                    names.update((a.asname or a.name).split(".")[0] for a in node.names)
        return names

    def _insertion_point(self, lines: list[Line]) -> tuple[int, bool]:
        """(index to insert at, whether that is *before* a torch import)."""
        for i, line in enumerate(lines):
            imports = [n for n in line.imports if self._root_is(n, "torch")]
            if not imports:
                continue
            if line.simple and not any(self._needs_npu(n) for n in imports):
                return i + 1, False
            return i, True
        index = 0
        if lines and lines[0].docstring:
            index = 1
        while index < len(lines) and lines[index].future:
            index += 1
        return index, False


def finish(ctx: SpanContext, facts: ModuleFacts, done: Finishing) -> None:
    """The family's finishing step (Family.finish): ``import torch_npu`` and the helper lines,
    unless a later stage inserts them (engine/stages.py, through insert_torch_npu)."""
    if done.insert_imports:
        TorchNpuInsert(ctx, facts).run(changed=bool(ctx.events) or done.torch_npu_named)


def insert_torch_npu(ctx: SpanContext, facts: ModuleFacts, changed: bool) -> None:
    """``import torch_npu`` and the helper lines once the structural options have run."""
    TorchNpuInsert(ctx, facts).run(changed=changed)
