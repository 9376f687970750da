"""Span pass: ``torch.cuda.<X>`` -> ``torch.npu.<X>`` in expressions (rules device_api.*,
amp.cuda_amp), the TF32 switches -> their HF32 counterparts (device_api.hf32_switch) and the
NVIDIA command-line tools the code runs (rule device_api.nvidia_tool)."""

from __future__ import annotations

import ast

from ms_fmk_transplt.catalogue.rule_catalog import declare
from ms_fmk_transplt.engine.rules.advice.advice_rows import TF32_TO_HF32
from ms_fmk_transplt.engine.rules.device_api.cuda_chains import CUDA, CudaChains
from ms_fmk_transplt.engine.rules.device_api.no_counterpart import (
    NVIDIA_TOOL,
    PROCESS_CALLS,
    PROCESS_LEAVES,
    no_npu_counterpart_at,
    nvidia_tool,
    tool_message,
)
from ms_fmk_transplt.engine.spans.shared_tree import tree_of
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext

# The rows of the namespace table (rules/interface_table.json, cuda_namespace) name these ids.
INTERFACE_TABLE = declare(
    "device_api.interface_table",
    "the porting guide's interface tables: `torch.cuda.is_available/set_device/synchronize/Stream/"
    "...` and `torch.cuda.FloatTensor` & co. -> `torch.npu.*`",
    "The Ascend porting guide lists the `torch.cuda` device, stream and event APIs and the CUDA "
    "tensor types with their `torch.npu` counterparts (same signatures); these names are rewritten "
    "in expressions and imports, resolved through import aliases (`import torch as th`).",
)
NPU_NAMESPACE = declare(
    "device_api.npu_namespace",
    "any other `torch.cuda.X` that the target's `torch.npu` also has -> `torch.npu.X`",
    "Memory statistics, RNG state, graphs, streams: torch_npu mirrors much of `torch.cuda` under "
    "`torch.npu`. A name is migrated when every release of the `-v` target version provides it "
    "(rules/torch_npu_names/<version>.json, read from the public wheels); otherwise it is left "
    "alone and reported (rule device_api.no_npu_counterpart).",
)


class DeviceApiSpans(CudaChains):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        # id(outermost chain node) -> (cuda name, npu name, rule, snippet before) to record
        self.pending: dict[int, tuple[str, str, str, str]] = {}

    def leave_Name(self, node: ast.Name) -> None:
        if self.ctx.is_claimed(node):
            return
        if id(node) in self.chain_of and self.ctx.qname(node) == CUDA:
            outer, full = self._full_name(node)
            if self.tables.lookup_cuda_import(full) is None:  # an alias keeps member names
                no_npu_counterpart_at(self.ctx, self.ctx.lines(outer), full)

    def leave_Attribute(self, node: ast.Attribute) -> None:
        pending = self.pending.pop(id(node), None)
        if pending is not None:
            cuda_name, npu_name, rule, before = pending
            self.ctx.record(
                self.ctx.lines(node),
                rule,
                f"{cuda_name} -> {npu_name}",
                before,
                self.ctx.snippet(node),
            )
        if node.attr != "cuda" or self.ctx.qname(node) != CUDA:
            return
        if self.ctx.is_claimed(node):
            return
        outer, full = self._full_name(node)
        mapped = self.tables.lookup_cuda(full)
        if mapped is None:
            no_npu_counterpart_at(self.ctx, self.ctx.lines(outer), full)
            return
        npu_name, rule = mapped
        member = self.renamed_member(full, npu_name)
        if member is not None and id(node) in self.member_of:
            self.ctx.rename_attr(self.member_of[id(node)], member)
        if outer is node:
            before = self.ctx.snippet(node, updated=False)
            self.ctx.rename_attr(node, "npu")
            self.ctx.record(
                self.ctx.lines(node), rule, f"{full} -> {npu_name}", before, self.ctx.snippet(node)
            )
        else:
            before = self.ctx.snippet(outer, updated=False)
            self.ctx.rename_attr(node, "npu")
            self.pending[id(outer)] = (full, npu_name, rule, before)

    # -- NVIDIA command-line tools (nvidia-smi, nvcc) ----------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        """``os.popen("nvidia-smi -L")``, ``subprocess.run(["nvcc", "--version"])``."""
        if (
            node.args
            and self.ctx.last_name(node.func) in PROCESS_LEAVES
            and self.ctx.qname(node.func) in PROCESS_CALLS
        ):
            self._nvidia_tool(node.args[0])

    def visit_Assign(self, node: ast.Assign) -> None:
        """``cmd = "nvidia-smi -L"``: a command kept for a later call."""
        self._nvidia_tool(node.value)

    def _nvidia_tool(self, command: ast.expr) -> None:
        found = nvidia_tool(command)
        if found is not None:
            shown, entry = found
            lines = self.ctx.lines(command)
            self.ctx.unsupported(lines, shown, entry, tool_message(shown), rule=NVIDIA_TOOL)


TF32_ADVICE = TF32_TO_HF32  # its replacements pair each TF32 switch with its HF32 one
# a change of this rule does what that advice says: no advice row on its lines (answers=)
HF32_SWITCH = declare(
    "device_api.hf32_switch",
    "TF32 switches: `torch.backends.cudnn.allow_tf32` / `torch.backends.cuda.matmul.allow_tf32` "
    "-> `torch.npu.conv.allow_hf32` / `torch.npu.matmul.allow_hf32`",
    "TF32 does not exist on the NPU; its reduced-precision float32 mode is HF32, and NPU "
    "convolutions use it by default (`torch.npu.conv.allow_hf32` is True, like "
    "`cudnn.allow_tf32`; `torch.npu.matmul.allow_hf32` is False, like "
    "`cuda.matmul.allow_tf32`). Left as it is, `torch.backends.cudnn.allow_tf32 = False` would "
    "do nothing and the user's full-float32 intent would be lost; so each assignment to a "
    "TF32 switch becomes one to its HF32 counterpart, same value (the pairs are the "
    "replacements of `advice.tf32_to_hf32` in rules/advice.json). A read of "
    "`cuda.matmul.allow_tf32` stays as written, without a row, unless the file also sets it "
    "(a save and restore: `old = ...allow_tf32`, `...allow_tf32 = old`, both sides renamed): "
    "torch's flag follows `torch.set_float32_matmul_precision` (on any build: it reads "
    "torch's global context), torch_npu's `allow_hf32` does not, so `assert "
    "torch.backends.cuda.matmul.allow_tf32` after `set_float32_matmul_precision(...)` "
    "would change its meaning if renamed, and runs as written. A read of "
    "`cudnn.allow_tf32` (no such coupling) is renamed like a write: it reads what the "
    "migrated writes set. "
    "Where the `-v` target lacks the HF32 name, or "
    "the switch is not reached through `torch` (`from torch.backends import cudnn`), it is left "
    "alone and reported as before (unsupported.backend_switch), with the advice row.",
    caveat="HF32 is not TF32 (float32 range, about 11 mantissa bits, other operators): "
    "check the precision the run needs",
    answers=TF32_ADVICE,
)
TF32_ATTRIBUTE = "allow_tf32"
CUDNN_TF32 = "torch.backends.cudnn.allow_tf32"


class Hf32Switches(SpanConcern):
    """``torch.backends.cudnn.allow_tf32 = x`` -> ``torch.npu.conv.allow_hf32 = x`` (assignments;
    a read of the matmul switch stays as written unless the file also sets it)."""

    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        entry = self.tables.advice.by_id.get(TF32_ADVICE)
        pairs = entry.replacement.items() if entry is not None else ()
        self.switches = {tf32: hf32 for tf32, hf32 in pairs if tf32.endswith("." + TF32_ATTRIBUTE)}
        self._stored: set[str] | None = None  # the switches the file sets, as written

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr != TF32_ATTRIBUTE or self.ctx.is_claimed(node):
            return
        qualified = self.ctx.qname(node) or ""
        hf32 = self.switches.get(qualified)
        if hf32 is None or not self.tables.target_has(hf32):
            return
        if not _through_torch(self.ctx, node):
            return  # `cudnn.allow_tf32` after `from torch.backends import cudnn`: reported
        if not isinstance(node.ctx, ast.Store) and not self._renamed_read(node, qualified):
            # a read runs as written and is kept, without a row: torch's flag follows
            # set_float32_matmul_precision, torch_npu's does not (a rename changes the meaning)
            self.ctx.claim(node)
            return
        root = _root(node)
        before = self.ctx.snippet(node, updated=False)
        tail = hf32[len("torch") :]
        self.ctx.replace(self.ctx.source.span(root)[1], self.ctx.source.span(node)[1], tail)
        self.ctx.claim(node)
        self.ctx.record(
            self.ctx.lines(node), HF32_SWITCH, f"{qualified} -> {hf32}", before,
            self.ctx.snippet(node),
        )  # fmt: skip

    def _renamed_read(self, node: ast.Attribute, qualified: str) -> bool:
        """A read renamed with the writes: of cudnn's switch (what the migrated writes set),
        or of the matmul switch in a file that also sets it (a save and restore)."""
        if qualified == CUDNN_TF32:
            return True
        if self._stored is None:
            tree = tree_of(self.ctx.source.data)
            self._stored = {
                self._qualified(n)
                for n in ast.walk(tree)
                if isinstance(n, ast.Attribute)
                and n.attr == TF32_ATTRIBUTE
                and isinstance(n.ctx, ast.Store)
            }
        return qualified in self._stored

    def _qualified(self, node: ast.Attribute) -> str:
        """``th.backends.cuda.matmul.allow_tf32`` with its root through the file's imports
        (``import torch as th``): ``torch.backends.cuda.matmul.allow_tf32``."""
        parts = [node.attr]
        value = node.value
        while isinstance(value, ast.Attribute):
            parts.append(value.attr)
            value = value.value
        root = value.id if isinstance(value, ast.Name) else "?"
        return ".".join([self.ctx.import_bound.get(root, root), *reversed(parts)])


def _root(node: ast.Attribute) -> ast.expr:
    root = node.value
    while isinstance(root, ast.Attribute):
        root = root.value
    return root


def _through_torch(ctx: SpanContext, node: ast.Attribute) -> bool:
    root = _root(node)
    return isinstance(root, ast.Name) and ctx.qname(root) == "torch"
