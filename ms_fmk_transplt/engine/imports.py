"""Import statements and ``import torch_npu`` (rules imports.cuda_module, imports.torch_npu).

* ``import torch.cuda.amp as amp`` -> ``import torch.npu.amp as amp``
* ``from torch.cuda.amp import autocast`` -> ``from torch.npu.amp import autocast``
* ``from torch import cuda`` -> ``from torch import npu as cuda`` (uses of ``cuda.`` keep working)
* ``from torch.cuda import synchronize, nvtx`` -> ``from torch.npu import synchronize; from
  torch.cuda import nvtx`` (names the NPU lacks stay, with a warning)
* ``import torch_npu`` is inserted once into every file the engine changed, after the first
  module-level torch import (before it when that import itself needs torch.npu), or after the
  module docstring and ``from __future__`` imports when the file imports no torch at module level.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Union

import libcst as cst
from libcst.helpers import get_full_name_for_node, get_full_name_for_node_or_raise

from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.config_module import is_openmmlab_config
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.spans.imports_spans import CUDA_MODULE
from ms_fmk_transplt.engine.spans.torch_npu_spans import TORCH_NPU

CUDA = "torch.cuda"
# what a module's body holds (LibCST types it so: a block's statements are BaseStatement)
_Statement = Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]


def _dotted(name: str) -> cst.Attribute | cst.Name:
    expr = cst.parse_expression(name)
    assert isinstance(expr, (cst.Attribute, cst.Name))
    return expr


def _imports_torch_npu(stmt: cst.CSTNode) -> bool:
    for node in _module_level_imports(stmt):
        if isinstance(node, cst.Import):
            if any(
                get_full_name_for_node_or_raise(a.name).split(".")[0] == "torch_npu"
                for a in node.names
            ):
                return True
        elif node.module is not None and not node.relative:
            if get_full_name_for_node_or_raise(node.module).split(".")[0] == "torch_npu":
                return True
    return False


def _module_level_imports(stmt: cst.CSTNode) -> list[cst.Import | cst.ImportFrom]:
    """Import statements executed when the module is imported (not inside def/class)."""
    found: list[cst.Import | cst.ImportFrom] = []

    class Collect(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            found.append(node)

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            found.append(node)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

    stmt.visit(Collect())
    return found


def _imports_torch(node: cst.Import | cst.ImportFrom) -> bool:
    if isinstance(node, cst.Import):
        return any(
            get_full_name_for_node_or_raise(a.name).split(".")[0] == "torch" for a in node.names
        )
    if node.relative or node.module is None:
        return False
    return get_full_name_for_node_or_raise(node.module).split(".")[0] == "torch"


def _needs_npu(node: cst.Import | cst.ImportFrom) -> bool:
    if isinstance(node, cst.Import):
        return any(
            get_full_name_for_node_or_raise(a.name).startswith("torch.npu") for a in node.names
        )
    if node.relative or node.module is None:
        return False
    module = get_full_name_for_node_or_raise(node.module)
    if module.startswith("torch.npu"):
        return True
    names = node.names
    return (
        module == "torch"
        and not isinstance(names, cst.ImportStar)
        and any(get_full_name_for_node(a.name) == "npu" for a in names)
    )


class Imports(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        table = self.tables.imports
        self.rule, self.npu_rule = CUDA_MODULE, TORCH_NPU
        self.statement = table.torch_npu_statement

    def _record(self, original: cst.CSTNode, updated: cst.CSTNode, message: str) -> None:
        self.ctx.record(
            original, self.rule, message, self.ctx.snippet(original), self.ctx.snippet(updated)
        )

    # -- import a.b.c [as x] ---------------------------------------------------------------
    def leave_Import(self, original: cst.Import, updated: cst.Import) -> cst.Import:
        names = list(updated.names)
        messages = []
        for i, alias in enumerate(original.names):
            full = get_full_name_for_node(alias.name) or ""
            if full != CUDA and not full.startswith(CUDA + "."):
                continue
            mapped = self.tables.lookup_cuda_import(full)
            if mapped is None:
                self.ctx.no_npu_counterpart(alias, full, "import left")
                continue
            names[i] = names[i].with_changes(name=_dotted(mapped[0]))
            messages.append(f"import {full} -> import {mapped[0]}")
        if not messages:
            return updated
        new = updated.with_changes(names=names)
        self._record(original, new, "; ".join(messages))
        return new

    # -- from a.b import c -----------------------------------------------------------------
    def leave_ImportFrom(
        self, original: cst.ImportFrom, updated: cst.ImportFrom
    ) -> cst.ImportFrom | cst.FlattenSentinel[cst.BaseSmallStatement]:
        if original.relative or original.module is None:
            return updated
        module = get_full_name_for_node(original.module) or ""
        if module == "torch":
            return self._from_torch(original, updated)
        if module != CUDA and not module.startswith(CUDA + "."):
            return updated
        mapped_module = self.tables.lookup_cuda(module)
        if mapped_module is None:
            self.ctx.no_npu_counterpart(original, module, "import left")
            return updated
        npu_module = mapped_module[0]
        if isinstance(updated.names, cst.ImportStar):
            new = updated.with_changes(module=_dotted(npu_module))
            self._record(original, new, f"from {module} import * -> from {npu_module} import *")
            return new
        assert not isinstance(original.names, cst.ImportStar)  # (as updated's)
        supported: list[cst.ImportAlias] = []
        unsupported: list[cst.ImportAlias] = []
        for orig_alias, alias in zip(original.names, updated.names):
            full = f"{module}.{get_full_name_for_node(orig_alias.name)}"
            (supported if self.tables.lookup_cuda_import(full) else unsupported).append(alias)
            if not self.tables.lookup_cuda_import(full):
                self.ctx.no_npu_counterpart(orig_alias, full, "import left")
        if not supported:
            return updated
        if not unsupported:
            new = updated.with_changes(module=_dotted(npu_module))
            self._record(original, new, f"from {module} import ... -> from {npu_module} import ...")
            return new
        npu_part = updated.with_changes(
            module=_dotted(npu_module), names=_clean_aliases(supported), lpar=None, rpar=None
        )
        cuda_part = updated.with_changes(names=_clean_aliases(unsupported), lpar=None, rpar=None)
        result = cst.FlattenSentinel([npu_part, cuda_part])
        self.ctx.record(
            original,
            self.rule,
            f"from {module} import: names torch_npu provides now come from {npu_module}",
            self.ctx.snippet(original),
            f"{self.ctx.snippet(npu_part)}; {self.ctx.snippet(cuda_part)}",
        )
        return result

    def _from_torch(self, original: cst.ImportFrom, updated: cst.ImportFrom) -> cst.ImportFrom:
        if isinstance(updated.names, cst.ImportStar):
            return updated
        assert not isinstance(original.names, cst.ImportStar)  # (as updated's)
        names = list(updated.names)
        changed = False
        for i, alias in enumerate(original.names):
            if get_full_name_for_node(alias.name) != "cuda":
                continue
            asname = alias.asname or cst.AsName(name=cst.Name("cuda"))
            names[i] = names[i].with_changes(name=cst.Name("npu"), asname=asname)
            changed = True
        if not changed:
            return updated
        new = updated.with_changes(names=names)
        self._record(original, new, "from torch import cuda -> from torch import npu as cuda")
        return new

    # -- import torch_npu --------------------------------------------------------------------
    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        body = list(updated.body)
        present = next((i for i, stmt in enumerate(body) if _imports_torch_npu(stmt)), None)
        groups: list[tuple[int, bool, list[tuple[str, str, str]]]] = []
        wanted = self.ctx.options.insert_torch_npu
        wanted = wanted and not is_openmmlab_config(self.ctx.source)
        if self.ctx.events and self.ctx.needs_torch_npu and present is None and wanted:
            index, before = self._insertion_point(body)
            npu = (
                self.statement,
                self.npu_rule,
                "import torch_npu inserted (registers the NPU device with torch)",
            )
            groups.append((index, before, [npu]))
            after_npu = index
        elif self.ctx.helper_lines:
            after_npu = present + 1 if present is not None else self._insertion_point(body)[0]
        else:
            return updated
        helpers = list(self.ctx.helper_lines)
        if helpers:
            # helpers (they may be functions) go after the import block that follows torch_npu
            index = after_npu
            while index < len(body) and _is_import_line(body[index]):
                index += 1
            if "os" not in _bound_before(body, index):
                helpers.insert(0, ("import os", helpers[0][1], "import os for the helpers below"))
            if groups and groups[0][0] == index:
                groups[0][2].extend(helpers)
            else:
                groups.append((index, False, helpers))
        for index, before, lines in sorted(groups, key=lambda g: g[0], reverse=True):
            body = self._insert(original, body, index, before, lines)
        return updated.with_changes(body=body)

    def _insert(
        self,
        original: cst.Module,
        body: list[_Statement],
        index: int,
        before: bool,
        lines: list[tuple[str, str, str]],
    ) -> list[_Statement]:
        new_stmts: list[_Statement] = []
        for code, _, _ in lines:
            parsed = list(cst.parse_module(code + "\n").body)
            if isinstance(parsed[0], (cst.FunctionDef, cst.ClassDef)):  # two blank lines above
                parsed[0] = parsed[0].with_changes(leading_lines=(cst.EmptyLine(), cst.EmptyLine()))
            new_stmts.extend(parsed)
        if index > 0 and not before:
            # Right after the previous statement (first torch import, import block, docstring or
            # __future__ imports): the comments above the next statement stay with it.
            line = self.ctx.lines(original.body[index - 1])[1] + 1
        elif index < len(body):
            # Before a statement (a torch import that needs torch.npu, or the first statement):
            # the new lines take over the comments/blank lines above it, so they stay on top.
            anchor = body[index]
            new_stmts[0] = new_stmts[0].with_changes(leading_lines=anchor.leading_lines)
            body[index] = anchor.with_changes(leading_lines=())
            line = self.ctx.lines(original.body[index])[0]
        else:
            line = self._end_line(original) + 1
        body[index:index] = new_stmts
        for code, rule, message in lines:
            if code.startswith(("def ", "class ")):
                code = "\n\n" + code
            self.ctx.record_insert(line, rule, message, code, first=True)
        return body

    def _insertion_point(self, body: Sequence[cst.BaseStatement]) -> tuple[int, bool]:
        """(index to insert at, whether that is *before* a torch import)."""
        for i, stmt in enumerate(body):
            imports = [n for n in _module_level_imports(stmt) if _imports_torch(n)]
            if not imports:
                continue
            if isinstance(stmt, cst.SimpleStatementLine) and not any(
                _needs_npu(n) for n in imports
            ):
                return i + 1, False
            return i, True
        index = 0
        if body and _is_docstring(body[0]):
            index = 1
        while index < len(body) and _is_future_import(body[index]):
            index += 1
        return index, False

    def _end_line(self, module: cst.Module) -> int:
        if not module.body:
            return len(module.header)
        return self.ctx.lines(module.body[-1])[1]


def _is_import_line(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
    )


def _bound_before(body: Sequence[cst.BaseStatement], index: int) -> set[str]:
    """Names bound by module-level imports among the first ``index`` statements."""
    names: set[str] = set()
    for stmt in body[:index]:
        for node in _module_level_imports(stmt):
            if isinstance(node, cst.Import):
                for a in node.names:
                    bound = a.asname.name if a.asname else a.name
                    names.add((get_full_name_for_node(bound) or "").split(".")[0])
    return names


def _clean_aliases(aliases: list[cst.ImportAlias]) -> list[cst.ImportAlias]:
    out = []
    for i, alias in enumerate(aliases):
        if i == len(aliases) - 1:
            alias = alias.with_changes(comma=cst.MaybeSentinel.DEFAULT)
        else:
            alias = alias.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        out.append(alias)
    return out


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_future_import(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and bool(stmt.body)
        and all(
            isinstance(s, cst.ImportFrom)
            and s.module is not None
            and get_full_name_for_node(s.module) == "__future__"
            for s in stmt.body
        )
    )
