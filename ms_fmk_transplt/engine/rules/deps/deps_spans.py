"""Span pass (with ``--deps``): a call of an installed library's API, an instance's method
(``t = Trainer(...)`` then ``t.fit()``) or the import of a library module whose own code
reaches CUDA-specific code in the library (engine/library_facts.py) is a row at the project's
line (rules deps.cuda_path and deps.cpu_path, declared here); the rows of one library in one
file fold into one (``fold``), into the library table's own row when the file has one."""

from __future__ import annotations

import ast
import dataclasses

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.library_facts import CUDA, DepsFacts
from ms_fmk_transplt.engine.rules.family_spec import Folding
from ms_fmk_transplt.engine.rules.libraries.library_run_folds import DEPS_MARK
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.events import Notice
from ms_fmk_transplt.tables.unsupported_table import Entry

CUDA_PATH = declare(
    "deps.cuda_path",
    "A library API the project calls reaches code that needs CUDA (`--deps`)",
    "With `--deps`, the installed libraries the project imports are analysed with the "
    "engine's own rules: the lines the migration would change in the project (`.cuda()`, "
    '`torch.cuda.set_device`, `"cuda"` devices, `nccl`) and CUDA-only code (extensions, '
    "Triton kernels, CUDA-only libraries) stay as they are in the library, which the tool "
    "never changes. An API whose call graph reaches such a line without a CUDA test on the "
    "way fails on the NPU: the row names the API and one path down to the line.",
    kind=OPEN_WORK,
    option="--deps",
)
CPU_PATH = declare(
    "deps.cpu_path",
    "A library API the project calls takes its CPU path on the NPU (`--deps`)",
    "The library decides by `torch.cuda.is_available()`, a `use_cuda` flag or a device "
    'compared with `"cuda"`, or uses a CUDA feature that switches itself off without CUDA '
    "(`torch.cuda.amp.GradScaler`): on the NPU it runs, on the CPU or without the feature. "
    "The row names the API and one path down to the line.",
    kind=OPEN_WORK,
    option="--deps",
)
CATEGORY = "third_party"
TIP = (
    "the library is not migrated: add `from torch_npu.contrib import transfer_to_npu` after "
    "`import torch_npu` at the top of the entry script (Ascend's automatic migration: torch.cuda "
    "and 'cuda' devices map to the NPU in the library too), use the library's Ascend build, or "
    "patch it where the path ends"
)
WHEN = " when the tests on its path hold"
_WHAT = {CUDA: "reaches code that needs CUDA", "cpu": "takes its CPU path on the NPU"}


def deps_words(ctx: SpanContext) -> tuple[str, ...]:
    """The libraries' names: a statement naming one is walked."""
    facts = _facts(ctx)
    return facts.anchor_words if facts is not None else ()


def _facts(ctx: SpanContext) -> DepsFacts | None:
    project = ctx.options.project
    return project.deps if project is not None else None


class DepsSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        self.facts = _facts(ctx)
        self.instances: dict[str, str] = {}  # name -> the library callable that made it

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._row(node, alias.name, imported=True)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and not node.level:
            self._row(node, node.module, imported=True)

    def leave_Name(self, node: ast.Name) -> None:
        self._base(node)

    def leave_Attribute(self, node: ast.Attribute) -> None:
        self._base(node)

    def _base(self, node: ast.expr) -> None:
        """``class Model(SRGANModel):``: the library's constructor runs for the project's
        class (its ``super().__init__``)."""
        if self.facts is None:
            return
        for holder in self.ctx.stack[-3:]:
            if isinstance(holder, ast.ClassDef) and any(b is node for b in holder.bases):
                dotted = self.ctx.qname(node)
                if dotted:
                    self._row(node, dotted)
                return

    def visit_Assign(self, node: ast.Assign) -> None:
        if self.facts is None or not isinstance(node.value, ast.Call):
            return
        made = self.ctx.qname(node.value.func) or ""
        if made.split(".", 1)[0] in self.facts.libraries:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.instances[target.id] = made
                elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    self.instances[f"{target.value.id}.{target.attr}"] = made

    def leave_Call(self, node: ast.Call) -> None:
        if self.facts is None:
            return
        func = node.func
        if isinstance(func, ast.Attribute):
            owner = _dotted(func.value)
            if owner in self.instances:
                self._row(node, f"{self.instances[owner]}.{func.attr}")
                return
        dotted = self.ctx.qname(func)
        if dotted:
            self._row(node, dotted)

    def _row(self, node: ast.AST, dotted: str, imported: bool = False) -> None:
        if self.facts is None:
            return
        found = self.facts.lookup(dotted)
        if found is None:
            return
        library, api, reach = found
        if imported and api != dotted.rstrip("."):
            return  # (an import names a module: only its own code counts)
        shown = dotted.split(".", 1)[1] if "." in dotted else dotted
        what = _WHAT[reach.kind]
        if reach.conditional:  # the path passes a test: an option or a setting leads there
            what = f"{what}{WHEN}"
        message = f"{library.label()}: {shown} {what}: " + " -> ".join(reach.path)
        rule = CUDA_PATH if reach.kind == CUDA else CPU_PATH
        entry = Entry(dotted, CATEGORY, "manual", f"{message}; {TIP}")
        self.ctx.unsupported(self.ctx.lines(node), dotted, entry, message, rule)


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return ""


def fold(notices: list[Notice], done: Folding) -> list[Notice]:
    """One row per library: the APIs the file calls and the first one's path; into the row
    the library table gives for the library in this file when there is one."""
    ours = [n for n in notices if n.rule in (CUDA_PATH, CPU_PATH)]
    if not ours:
        return notices
    groups: dict[str, list[Notice]] = {}
    for row in ours:
        groups.setdefault(row.api.split(".", 1)[0], []).append(row)
    replaced: dict[int, Notice | None] = {}
    for library, group in groups.items():
        # (the first path shown: a sure failure, a sure CPU path, then those behind a test)
        group.sort(key=lambda n: (WHEN in n.message, n.rule != CUDA_PATH, n.line))
        folded = _folded(group, done.migrated)
        curated = next(
            (
                n
                for n in notices
                if n.category == CATEGORY
                and n.rule not in (CUDA_PATH, CPU_PATH)
                and n.api.split(".", 1)[0] == library
            ),
            None,
        )
        replaced.update((id(n), None) for n in group)
        if curated is not None:
            replaced[id(curated)] = dataclasses.replace(
                curated,
                message=f"{curated.message}{DEPS_MARK}{folded.message}",
                tip=f"{curated.tip}{DEPS_MARK}{folded.message}",
            )
        else:
            replaced[id(group[0])] = folded
    out = [replaced.get(id(n), n) for n in notices]
    return [n for n in out if n is not None]


def _kind(row: Notice) -> str:
    """How a row's API reaches, in short (the kinds of a folded row's APIs may differ)."""
    what = "needs CUDA" if row.rule == CUDA_PATH else "CPU path"
    return f"{what}, behind a test" if WHEN in row.message else what


def _folded(group: list[Notice], migrated: bool) -> Notice:
    first = group[0]
    apis: dict[str, list[int]] = {}
    for row in group:
        apis.setdefault(row.api, []).append(row.lines(migrated)[0])
    if len(apis) == 1 and len(group) == 1:
        return first
    label = first.message.split(": ", 1)[0]
    kinds = {row.api: _kind(row) for row in group}
    listed = ", ".join(
        f"{api.split('.', 1)[-1]} (line {', '.join(map(str, lines))}"
        + (f"; {kinds[api]}" if kinds[api] != kinds[first.api] else "")
        + ")"
        for api, lines in apis.items()
    )
    message = f"{label}: {listed}; {first.message.split(': ', 1)[1]}"
    return dataclasses.replace(first, message=message, tip=f"{message}; {TIP}")
