"""NPU performance and precision advice (rules advice.*; data: rules/advice.json, from the
porting guide's performance and precision chapters and torch_npu's documentation).

Advice is not must-fix work: its rows go to their own sheet of unsupported_op.xlsx and to
advice.csv, never into the counts of manual work or the conversion rate. Each row names the API
or code pattern, what to do, the expected effect and where it is documented. One row per file,
advice and API, at the first use (the tip says how many more uses the file has), so that a
transformer with fifty ``transpose(...).contiguous()`` gets one row, not fifty.

Triggers are APIs by qualified name (``torch.optim.AdamW``, ``F.scaled_dot_product_attention``)
or code patterns: ``rope`` (a function named like a hand-written rotary embedding),
``rms_norm`` (a class named ...RMSNorm computing a reciprocal square root), ``swiglu``
(``silu(a) * b``), ``contiguous_copy`` (``x.transpose(...).contiguous()``/``permute``),
``loss_scaling`` (an ``if`` testing ``isfinite``/``isinf``/``isnan`` whose branch changes a
``*scale*`` value: hand-written float16 loss scaling) and ``training_entry`` (the
``if __name__ == "__main__":`` of a training script, or the module-level code of one without a
guard: training_scripts.py).
Advice relying on a torch_npu name the target version lacks is not given.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ms_fmk_transplt.catalogue.rule_catalog import ADVICE as ADVICE_KIND
from ms_fmk_transplt.catalogue.rule_catalog import declare
from ms_fmk_transplt.engine.program_facts import ProgramFacts
from ms_fmk_transplt.engine.rules.advice.training_scripts import (
    MAIN_GUARD,
    training_place,
    training_script,
    trains,
)
from ms_fmk_transplt.engine.scope_model import Scope
from ms_fmk_transplt.engine.word_search import word_search
from ms_fmk_transplt.events import ADVICE, Notice, Severity
from ms_fmk_transplt.tables import Tables
from ms_fmk_transplt.tables.target_tables import AdviceEntry

_DETAILS = (
    "Advice, not must-fix work: the code runs on the NPU as it is, and its rows go to the Advice "
    "sheet of unsupported_op.xlsx and to advice.csv, never into the manual-work counts or the "
    "conversion rate. One row per file, advice and API, at the first use; an advice about the "
    "construct of an unsupported_op row (same line and API, e.g. cudnn.benchmark's caveat row) is "
    "part of that row (its tip follows the row's), not a second item. What to do, the expected "
    "effect, what triggers it and where it is documented come from rules/advice.json (below); "
    "advice relying on a torch_npu name the `-v` target lacks is not given."
)


def _advice(rule_id: str, summary: str) -> str:
    return declare(rule_id, summary, _DETAILS, kind=ADVICE_KIND)


# device_api.hf32_switch migrates the switches this advice is about (no row where it did)
TF32_TO_HF32 = _advice("advice.tf32_to_hf32", "TF32 switches: the NPU's counterpart is HF32")
# amp.device_type and amp.scaler_device name a GradScaler's NPU device (no row where they did)
FP16_LOSS_SCALING = _advice(
    "advice.fp16_loss_scaling", "float16 training: keep dynamic loss scaling"
)
# The entries of rules/advice.json name these ids (tests/test_rule_catalog.py checks both ways).
ADVICE_RULES = (
    _advice("advice.fused_optimizer", "use torch_npu's fused optimizers (`NpuFusedAdamW`, ...)"),
    _advice(
        "advice.sdpa_fusion_attention",
        "`F.scaled_dot_product_attention` on the NPU: supported shapes, or npu_fusion_attention",
    ),
    _advice("advice.flash_attention", "FlashAttention / xformers: use `npu_fusion_attention`"),
    _advice("advice.rotary_mul", "a hand-written rotary embedding: use `torch_npu.npu_rotary_mul`"),
    _advice("advice.rms_norm", "a hand-written RMSNorm: use `torch_npu.npu_rms_norm`"),
    _advice("advice.swiglu", "`silu(a) * b`: use `torch_npu.npu_swiglu`"),
    _advice("advice.contiguous_copy", "`transpose(...).contiguous()`: a copy kernel per call"),
    _advice("advice.task_queue", "launch training with `TASK_QUEUE_ENABLE=2`"),
    _advice(
        "advice.binary_kernels",
        "use prebuilt binary kernels: `set_compile_mode(jit_compile=False)`",
    ),
    _advice("advice.cpu_affinity", "bind host threads to CPU cores with `CPU_AFFINITY_CONF`"),
    _advice(
        "advice.ascend_profiler", "profile with the Ascend PyTorch Profiler (`torch_npu.profiler`)"
    ),
    _advice("advice.aoe_tuning", "cuDNN autotuning: use AOE operator tuning (`torch.npu.set_aoe`)"),
    _advice("advice.apex_combine_grad", "Ascend's apex: `amp.initialize(..., combine_grad=True)`"),
    TF32_TO_HF32,
    _advice("advice.deterministic_apis", "reproducible runs: deterministic settings on the NPU"),
    _advice("advice.inf_nan_apis", "operators whose inf / nan results differ on the NPU"),
    FP16_LOSS_SCALING,
)

ROPE_FUNCTIONS = frozenset(
    {"rotate_half", "apply_rotary_pos_emb", "apply_rotary_emb", "apply_rotary_embedding"}
)
SILU = frozenset({"torch.nn.functional.silu", "torch.silu"})
TRANSPOSES = frozenset({"transpose", "permute"})
FINITE_TESTS = frozenset({"isfinite", "isinf", "isnan"})
PATTERN_WORDS = (
    ROPE_FUNCTIONS | FINITE_TESTS | {"rsqrt", "RMSNorm", "silu", "contiguous", "__main__"}
)
# byte-level tests that a file may hold a pattern: the file is parsed only if one matches
PATTERN_BYTES = {
    "rope": re.compile(rb"def\s+(?:" + "|".join(sorted(ROPE_FUNCTIONS)).encode() + rb")\b"),
    "rms_norm": re.compile(rb"class\s+\w*(?i:rmsnorm)"),
    "swiglu": re.compile(rb"silu\("),
    "contiguous_copy": re.compile(rb"\.(?:transpose|permute)\([^\n]*\)\s*\.contiguous\("),
    "training_entry": MAIN_GUARD,
    "loss_scaling": re.compile(rb"is(?:finite|inf|nan)\s*\("),
}
# each starts at a word's start
WHOLE_WORD = frozenset({"rope", "rms_norm", "swiglu", "loss_scaling"})
SCALE = b"scale"  # the loss_scaling pattern needs it too
LOSS_SCALING = "isfinite check + *scale* update (hand-written loss scaling)"


def may_hold_pattern(source: bytes, patterns: Iterable[str]) -> bool:
    for pattern in patterns:
        bytes_pattern = PATTERN_BYTES[pattern]
        if pattern in WHOLE_WORD:
            found = word_search(bytes_pattern, source)  # as if the pattern began with \b
        else:
            found = bytes_pattern.search(source)
        if found and _also_holds(pattern, source):
            return True
    return False


def _also_holds(pattern: str, source: bytes) -> bool:
    """What else a pattern needs in the file, besides its shape."""
    if pattern == "training_entry":
        return trains(source)
    if pattern == "loss_scaling":
        return SCALE in source
    return True


QName = Callable[[ast.AST, Scope], "str | None"]
# compound statements whose header is a row's place (a training script's module-level loop)
_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)


@dataclass
class _Found:
    entry: AdviceEntry
    api: str
    line: int
    end_line: int
    count: int = 1


class AdviceFinder:
    def __init__(
        self,
        source: bytes,
        path: str,
        tables: Tables,
        tree: ast.Module,
        qname: QName,
        programs: ProgramFacts | None = None,
    ) -> None:
        self.path = path
        self.tables = tables
        self.table = tables.advice
        self.tree = tree
        self.qname = qname  # what an expression read in a scope refers to (target_scan.py)
        self.source = source
        # the once-per-training-script advice goes here (training_scripts.py)
        self.training = training_script(path, source, programs)
        self.found: dict[tuple[str, str], _Found] = {}
        # (line, advice id): a change of the passes already did what the advice says there
        self.answered: frozenset[tuple[int, str]] = frozenset()

    def _add(self, entry: AdviceEntry, api: str, node: ast.AST) -> None:
        if (node.lineno, entry.id) in self.answered:  # type: ignore[attr-defined]
            return
        replacement = entry.replacement.get(api)
        needs = [replacement] if replacement else entry.needs
        if not all(self.tables.target_has(name) for name in needs):
            return
        key = (entry.id, api)
        if key in self.found:
            self.found[key].count += 1
            return
        end = getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
        line = node.lineno  # type: ignore[attr-defined]
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.If, *_LOOPS)):
            end = line  # the header is the place
        self.found[key] = _Found(entry, api, line, end)

    def _pattern(self, pattern: str, api: str, node: ast.AST) -> None:
        for entry in self.table.by_pattern.get(pattern, ()):
            self._add(entry, api, node)

    def api(self, node: ast.AST, qualified: str, call: ast.Call | None = None) -> None:
        entry = self.table.by_api.get(qualified)
        if entry is None or _asks_npu_default(qualified, call) or _reads_switch(node, qualified):
            return
        self._add(entry, qualified, node)

    def visit(self, node: ast.AST, parent: ast.AST | None, scope: Scope) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name in ROPE_FUNCTIONS:
                self._pattern("rope", f"{node.name} (hand-written rotary embedding)", node)
        elif isinstance(node, ast.ClassDef):
            if "rmsnorm" in node.name.lower() and _calls_rsqrt(node):
                self._pattern("rms_norm", f"{node.name} (hand-written RMSNorm)", node)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            if any(self._calls(side, SILU, scope) for side in (node.left, node.right)):
                self._pattern("swiglu", "silu(a) * b (hand-written SwiGLU)", node)
        elif isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "contiguous"
                and isinstance(func.value, ast.Call)
                and isinstance(func.value.func, ast.Attribute)
                and func.value.func.attr in TRANSPOSES
            ):
                self._pattern("contiguous_copy", f"{func.value.func.attr}(...).contiguous()", node)
        elif isinstance(node, ast.If) and _scales_on_finite_test(node):
            self._pattern("loss_scaling", LOSS_SCALING, node)

    def _calls(self, node: ast.AST, names: frozenset[str], scope: Scope) -> bool:
        return isinstance(node, ast.Call) and self.qname(node.func, scope) in names

    def finish(self) -> list[Notice]:
        place = training_place(self.tree, self.source) if self.training else None
        if place is not None:
            self._pattern("training_entry", place[1], place[0])
        return [self._notice(f) for f in self.found.values()]

    def _notice(self, found: _Found) -> Notice:
        entry = found.entry
        tip = entry.advice
        replacement = entry.replacement.get(found.api)
        if replacement:
            tip = f"use {replacement}: {tip}"
        if found.count > 1:
            tip += f" ({found.count} uses in this file; the first is here)"
        return Notice(
            self.path,
            found.line,
            entry.id,
            Severity.INFO,
            f"{entry.kind} advice for {found.api}: {entry.advice}",
            api=found.api,
            category=entry.kind,
            action=ADVICE,
            tip=tip,
            end_line=found.end_line,
        )


# a call whose first argument asks for what the NPU does anyway: nothing to advise
# (`set_float32_matmul_precision("highest")`: full float32 matmuls, torch.npu.matmul.allow_hf32's
# default False)
NPU_DEFAULTS = {"torch.set_float32_matmul_precision": "highest"}


SWITCHES = "torch.backends."  # its attributes are switches: set, they choose a backend


def _reads_switch(node: ast.AST, qualified: str) -> bool:
    """``if torch.backends.cudnn.allow_tf32:`` reads a switch: it sets nothing, and runs as
    written (no advice about setting it)."""
    return (
        qualified.startswith(SWITCHES)
        and isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Load)
    )


def _asks_npu_default(qualified: str, call: ast.Call | None) -> bool:
    default = NPU_DEFAULTS.get(qualified)
    if default is None or call is None:
        return False
    first = call.args[0] if call.args else None
    if first is None:
        first = next((k.value for k in call.keywords if k.arg == "precision"), None)
    return isinstance(first, ast.Constant) and first.value == default


def _scales_on_finite_test(node: ast.If) -> bool:
    """``if not torch.isfinite(norm): scale /= 2``: the test calls isfinite / isinf / isnan
    (a function or a tensor's method) and a branch assigns to a name or attribute holding
    "scale"."""
    if not any(_is_finite_test(n) for n in ast.walk(node.test)):
        return False
    for stmt in (*node.body, *node.orelse):
        for n in ast.walk(stmt):
            targets = (
                [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign)) else
                n.targets if isinstance(n, ast.Assign) else []
            )  # fmt: skip
            if any("scale" in _target_name(t).lower() for t in targets):
                return True
    return False


def _is_finite_test(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in FINITE_TESTS


def _target_name(target: ast.AST) -> str:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    if isinstance(target, ast.Subscript):
        return _target_name(target.value)
    return ""


def _calls_rsqrt(node: ast.ClassDef) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in ("rsqrt", "sqrt") for n in ast.walk(node))
