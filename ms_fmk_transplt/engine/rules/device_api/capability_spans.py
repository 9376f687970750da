"""Span pass: CUDA capability probes stay on ``torch.cuda`` (rule device_api.capability_probe).

``torch.cuda.get_device_capability()`` and ``torch.cuda.get_device_properties(i).major`` & co.
ask "which NVIDIA GPU is this?". torch_npu's ``get_device_capability`` warns and returns None, so a
migrated ``torch.npu.is_available() and torch.npu.get_device_capability() >= (9, 0)`` is true on
the NPU up to the comparison, which then raises TypeError. Left on ``torch.cuda`` -- the whole
boolean or comparison around the probe, ``is_available()`` included -- the probe is False on an
NPU host and the code takes its non-NVIDIA path, which runs on the NPU.
"""

from __future__ import annotations

import ast
import re

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.rules.device_api.probe_shapes import (
    PROBE_FIELDS,
    QName,
    checks_available,
    exits_early,
    negates_available,
    probe_calls,
    probe_class_lines,
    probed_variables,
    tried,
)
from ms_fmk_transplt.engine.spans.npu_siblings import accelerator_strings
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.engine.spans.units import Unit
from ms_fmk_transplt.tables.unsupported_table import Entry

CATEGORY = "capability_probe"
TIP = (
    "kept on torch.cuda: on an NPU host torch.cuda.is_available() is False, so this code takes "
    "its non-NVIDIA path; check that path suits the NPU (torch_npu's get_device_capability "
    "returns None; get_device_properties' major/minor are None, or absent in older releases)"
)
SELECTOR = Entry(
    ".is_cuda",
    CATEGORY,
    "caveat",
    "kept on is_cuda: this class sets up its CUDA path behind a capability probe kept on "
    "torch.cuda, so on the NPU that setup never happens; the NPU tensor takes the non-CUDA path",
)
RULE = declare(
    "device_api.capability_probe",
    "a CUDA capability probe (`get_device_capability`, `get_device_properties(i).major`) stays "
    "on torch.cuda, with a caveat row",
    "Code that asks which NVIDIA architecture it runs on (`get_device_capability() >= (9, 0)`, "
    "`get_device_properties(i).major`, `.multi_processor_count`, `.gcnArchName`) or "
    "which NCCL it has (`torch.cuda.nccl.version()`) selects NVIDIA-only paths. A probe in "
    "a `try` whose `except` catches what it raises off CUDA (`RuntimeError`, `AssertionError`, "
    "`Exception`) is a caveat: on an NPU host the except runs. A test's patch of "
    "`get_device_capability` on `torch.cuda` stays there with no row (the probe it feeds stays "
    "too); a patch of `is_available` kept beside it is a caveat (the code under test may "
    "have its own check migrated, which the patch then misses). Migrated to `torch.npu`, a "
    "probe would return None or lack the field and raise; so the smallest boolean, comparison "
    "or conditional expression (`probe() if torch.cuda.is_available() else x`) holding the "
    "probe is left entirely on "
    "`torch.cuda` (its `is_available()` included), which is False on an NPU host: the non-NVIDIA "
    "branch runs. Each probe is a `caveat` row (category `capability_probe`) so you check that "
    "branch; a probe its expression does not guard with `torch.cuda.is_available()` raises on an "
    "NPU host and is a `manual` row. The probes of one name in one file are one row (per "
    "action) listing their lines.",
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
TRIED = Entry(
    "torch.cuda.get_device_capability",
    CATEGORY,
    "caveat",
    "kept on torch.cuda, inside a try: on an NPU host this call raises (no CUDA device) and "
    "the except takes the non-NVIDIA path; check that path suits the NPU",
)
HIP = "torch.version.hip"  # a ROCm build: the branch it guards never runs on an NPU host
# patched probe names: get_device_capability is a probe wherever it is called (kept on
# torch.cuda); get_device_properties only when read for .major & co., which a patch cannot tell
PATCHED = frozenset({"get_device_capability"})
SETATTRS = frozenset({"setattr", "object"})  # monkeypatch.setattr / mock.patch.object
PATCH = Entry(
    "torch.cuda",
    CATEGORY,
    "caveat",
    "test patch of torch.cuda.is_available kept on torch.cuda beside the file's patches of "
    "capability probes: it reaches the checks that guard a kept probe, but not a check of the "
    "code under test migrated to torch.npu.is_available; patch that one too where the test "
    "needs it",
)
# a string naming a probe: the file patches probes (so its is_available patches stay too)
_PROBE_TARGET = re.compile(rb"[\"'](?:[\w.]*\.)?get_device_capability[\"']")


def hinted(source: bytes) -> bool:
    """Cheap test: could the file hold a probe at all (most files have none)?"""
    return b"get_device_" in source or b"nccl.version" in source


def _string(node: ast.AST) -> str | None:
    """The value of a plain string literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def patched_probe(call: ast.Call, qname: QName, source: bytes) -> bool:
    """``monkeypatch.setattr(torch.cuda, "get_device_capability", ...)`` (or
    ``mock.patch.object``): a test patching a probe (or, in a file that patches probes,
    ``is_available``) on torch.cuda -- the patch must stay where the kept probe reads."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in SETATTRS:
        return False
    args = call.args
    if len(args) < 2 or (qname(args[0]) or "") != "torch.cuda":
        return False
    name = _string(args[1])
    if name in PATCHED:
        return True
    return name == "is_available" and _PROBE_TARGET.search(source) is not None


def keep_patch(ctx: SpanContext, call: ast.Call, nodes: list[ast.AST], source: bytes) -> bool:
    """Keep a test's patch of a probe on torch.cuda (``nodes``: the call's subtree)."""
    if not patched_probe(call, ctx.qname, source):
        return False
    for node in nodes:
        ctx.claim(node)
    name = _string(call.args[1])
    if name in PATCHED:  # the probe stays on torch.cuda wherever it is called: nothing to do
        return True
    message = f"torch.cuda.{name}: test patch kept on torch.cuda beside patched probes"
    ctx.unsupported(ctx.lines(call), f"torch.cuda.{name}", PATCH, message, RULE)
    return True


def accelerator_choice(ctx: SpanContext, targets: list[str], value: list[ast.AST]) -> None:
    """``accelerator = "cuda" if torch.cuda.is_available() else "cpu"``: a Lightning accelerator
    chosen by asking torch.cuda (device_strings.not_a_device keeps its "cuda"): the question
    stays on torch.cuda too, or the NPU host would pick "cuda" and fail."""
    if not any("accelerator" in t.lower() for t in targets):
        return
    if checks_available(value, ctx.qname) and any(_literal(n) == "cuda" for n in value):
        for node in value:
            if not isinstance(node, ast.Constant):
                ctx.claim(node)


def _name_of(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _literal(node: ast.AST) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def assigns_accelerator(body: list[ast.AST]) -> bool:
    """``accelerator = "cuda"`` among ``body``."""
    for node in body:
        if not isinstance(node, ast.Assign) or _literal(node.value) != "cuda":
            continue
        if any("accelerator" in _name_of(t).lower() for t in node.targets):
            return True
    return False


def guard_of_probes(
    ctx: SpanContext,
    test: list[ast.AST],
    body: list[ast.AST],
    guarded: set[int],
    variables: frozenset[str] = frozenset(),
) -> None:
    """``if torch.cuda.is_available(): ... probe ...`` (or ``accelerator = "cuda"``, kept by
    device_strings.not_a_device): the test is part of what is kept -- on torch.cuda too
    (claimed), or the migrated branch would run the kept code on an NPU host, where it fails;
    the probes of the body are then guarded (``guarded``: their ids). Under ``if
    torch.version.hip:`` probes are guarded too: that branch never runs on an NPU host."""
    found = probe_calls(body, ctx.qname, variables)
    if checks_available(test, ctx.qname):
        if found or assigns_accelerator(body):
            for node in test:
                ctx.claim(node)
            guarded.update(id(call) for call in found)
    elif found and any((ctx.qname(n) or "") == HIP for n in test if _name_of(n) == "hip"):
        guarded.update(id(call) for call in found)


def keep_probes(
    ctx: SpanContext,
    nodes: list[ast.AST],
    guarded: set[int],
    variables: frozenset[str] = frozenset(),
    in_try: bool = False,
) -> None:
    """If ``nodes`` (an expression and everything in it) hold a probe: claim them all, so no
    other rule migrates any of it, and record a row per probe (``guarded``: ids of probes an
    enclosing ``if`` or conditional expression guards; ``in_try``: they run in a ``try`` whose
    ``except`` catches what they raise on an NPU host)."""
    found = probe_calls(nodes, ctx.qname, variables)
    if not found:
        return
    for inner in nodes:
        ctx.claim(inner)
    if checks_available(nodes, ctx.qname) or all(id(call) in guarded for call in found):
        entry = ENTRY  # caveat: the probe runs only where CUDA is
    elif in_try:
        entry = TRIED  # caveat: it raises on an NPU host, and the except takes over
    else:
        entry = UNGUARDED
    for call in found:
        api = ctx.qname(call.func) or ""
        message = f"{api}: CUDA capability probe kept on torch.cuda"
        ctx.unsupported(ctx.lines(call), api, entry, message, RULE)


class CapabilitySpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        # a "cuda" kept as Lightning's accelerator (only in a file importing Lightning): the
        # probe that chooses it stays on torch.cuda with it
        source = ctx.source.data  # (each scan once per file: ctx.once)
        self.active_accelerator = bool(ctx.once(accelerator_strings, source))
        self.active = ctx.once(hinted, source) or self.active_accelerator
        self.guarded: set[int] = set()
        self.variables = ctx.once(probed_variables, source) if self.active else frozenset()
        self.probe_classes = ctx.once(probe_class_lines, source) if self.active else frozenset()

    def visit_Assign(self, node: ast.Assign) -> None:
        if self.variables and not self.ctx.is_claimed(node):  # props = get_device_properties(d)
            nodes = list(ast.walk(node))
            keep_probes(self.ctx, nodes, self.guarded, self.variables, self._in_try())
        if self.active_accelerator:
            targets = [
                n.id if isinstance(n, ast.Name) else n.attr
                for t in node.targets
                for n in ast.walk(t)
                if isinstance(n, (ast.Name, ast.Attribute))
            ]
            accelerator_choice(self.ctx, targets, list(ast.walk(node.value)))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr == "is_cuda" and node.lineno in self.probe_classes:
            self.ctx.claim(node)
            message = "x.is_cuda kept: it selects the setup of a kept capability probe"
            self.ctx.unsupported(self.ctx.lines(node), ".is_cuda", SELECTOR, message, RULE)
            return
        # sm = get_device_properties(d).multi_processor_count; if torch.version.hip: ...
        if node.attr in PROBE_FIELDS or node.attr == "hip":
            self._keep(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        self._keep(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        self._keep(node)

    def visit_Call(self, node: ast.Call) -> None:
        self._keep(node)

    def _keep(self, node: ast.AST) -> None:
        if not self.active or self.ctx.is_claimed(node):
            return
        unit = self.ctx.unit
        assert unit is not None  # set while a unit is walked
        if unit.header and isinstance(unit.node, ast.If) and _test_of(unit.node) is node:
            body = [n for stmt in unit.node.body for n in ast.walk(stmt)]
            test = list(ast.walk(unit.node.test))
            if exits_early(body) and negates_available(test, self.ctx.qname):
                # `if not torch.cuda.is_available(): return`: it guards the statements after it
                body = [n for stmt in self._after(unit) for n in ast.walk(stmt)]
            guard_of_probes(self.ctx, list(ast.walk(node)), body, self.guarded, self.variables)
        nodes = list(ast.walk(node))
        if isinstance(node, ast.Call) and keep_patch(self.ctx, node, nodes, self.ctx.source.data):
            return
        # an ``if torch.version.hip:`` header holds no anchor word, so this pass never walks it:
        # its guard is looked up from the probe, by its enclosing ``if`` statements
        for outer in unit.ancestors:
            if isinstance(outer, ast.If) and any(
                node is n for s in outer.body for n in ast.walk(s)
            ):
                guard_of_probes(self.ctx, list(ast.walk(outer.test)), nodes, self.guarded)
        keep_probes(self.ctx, nodes, self.guarded, self.variables, self._in_try())

    def _in_try(self) -> bool:
        """The unit walked runs in a try that catches what a probe raises (probe_shapes.tried)."""
        unit = self.ctx.unit
        return unit is not None and tried(unit.node, unit.ancestors)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        """``probe() if torch.cuda.is_available() else fallback``: the test is kept with the
        probe it guards (on torch.cuda, as an ``if`` statement's: guard_of_probes)."""
        if self.active and not self.ctx.is_claimed(node):
            test, body = list(ast.walk(node.test)), list(ast.walk(node.body))
            guard_of_probes(self.ctx, test, body, self.guarded, self.variables)

    @staticmethod
    def _after(unit: Unit) -> list[ast.stmt]:
        """The statements after the unit's own in the block that holds it."""
        parent = unit.ancestors[-1] if unit.ancestors else None
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None) if parent is not None else None
            if isinstance(block, list) and unit.node in block:
                return block[block.index(unit.node) + 1 :]
        return []


def _test_of(node: ast.If) -> ast.expr:
    """An if's test, under a ``not`` (``if not torch.cuda.is_available(): return``)."""
    test = node.test
    return test.operand if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) else test
