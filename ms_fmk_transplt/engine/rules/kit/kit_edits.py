"""``kit aoe|profile|precision|assess -m MAIN``: the calls that turn MAIN into a kit's variant.

At the training loop training_loop.py finds (the loop holding the optimizer step), this LibCST
stage inserts ``msft_kit.<kit>_begin()`` right before the loop and ``msft_kit.<kit>_tick()`` as
the first statement of its body, plus ``import msft_kit`` after the module's imports (and, for
precision, ``msft_kit.precision_seed()`` after it, so seeds are fixed before any model or data
exists). msft_kit.py, the kit's runtime, is written next to MAIN (report/kit_files.py); what
each call does is said there. A call goes above the comments of the statement it precedes
(they stay with the code they describe) and above its decorators. A script without one
training loop is refused (``kit.no_loop``), and what the kit's guide asks of the script is
checked (kit_checks.py).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

import libcst as cst

from ms_fmk_transplt.catalogue.rule_catalog import declare
from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.rules.distributed_mode.existing_distributed import is_import_or_doc
from ms_fmk_transplt.engine.rules.kit.kit_checks import (
    NO_LOOP,
    check_script,
    is_tensorflow,
    tensorflow_notices,
)
from ms_fmk_transplt.engine.rules.kit.training_loop import NoTrainingLoop, find_training_loop

_KEEP = (
    "the kit's calls are what the kit writes: run the plain migration for a tree without them, "
    "or delete a call from the kit's tree"
)
_RUNTIME = (
    " msft_kit.py, written next to the script, is the kit's runtime; the launcher of the kit "
    "sets its environment variables."
)
IMPORT = declare(
    "kit.import",
    "kit: `import msft_kit` after the script's imports",
    "The kit's calls live in msft_kit.py, written next to the script (the script's folder is "
    "on `sys.path` when it runs), and imported after the script's own imports." + _RUNTIME,
    opt_out=_KEEP,
    option="kit",
    standalone=True,
    bookkeeping=True,
)
AOE_DUMP = declare(
    "kit.aoe_dump",
    "kit aoe: `torch.npu.set_aoe(dump_path)` right before the training loop",
    "`msft_kit.aoe_begin()` enables AOE's operator dump (`torch.npu.set_aoe`) into "
    "`MSFT_AOE_DUMP` (absolute, made if missing) before the first step, as the porting guide's "
    "AOE chapter shows. In a loop inside a per-epoch function only the first call acts." + _RUNTIME,
    opt_out=_KEEP,
    option="kit aoe",
    standalone=True,
    bookkeeping=True,
)
AOE_STOP = declare(
    "kit.aoe_stop",
    "kit aoe: the run stops once the first training step has run",
    "`msft_kit.aoe_tick()` is the loop body's first statement: at the second iteration it ends "
    "the run (the guide's `if i > 0: exit()`): one step's operators are enough to tune, and a "
    "longer dump only makes tuning slower. Then `aoe --job_type=2 --model_path=<dump>` tunes "
    "them (run_aoe_npu.sh does both)." + _RUNTIME,
    opt_out=_KEEP,
    option="kit aoe",
    standalone=True,
    bookkeeping=True,
)
PROFILE_START = declare(
    "kit.profile_start",
    "kit profile: torch_npu.profiler started right before the training loop",
    "`msft_kit.profile_begin()` starts `torch_npu.profiler.profile` with CPU and NPU "
    "activities, level 1 with PipeUtilization metrics, shapes and memory recorded, a "
    "`schedule(wait, warmup, active, repeat=1, skip_first)` given by keyword (torch_npu's "
    "positional order differs from torch's) and `tensorboard_trace_handler(MSFT_PROF_DIR)`."
    + _RUNTIME,
    opt_out=_KEEP,
    option="kit profile",
    standalone=True,
    bookkeeping=True,
)
PROFILE_STEP = declare(
    "kit.profile_step",
    "kit profile: `prof.step()` at every training step; the run stops once the traces are written",
    "`msft_kit.profile_tick()` is the loop body's first statement: from the second iteration on "
    "it calls `prof.step()` for the step that just finished; after the skipped, waiting, warm-up "
    "and active steps (MSFT_PROF_SKIP_FIRST 10, MSFT_PROF_WAIT 1, MSFT_PROF_WARMUP 1, "
    "MSFT_PROF_ACTIVE 2 by default) it stops the profiler and ends the run." + _RUNTIME,
    opt_out=_KEEP,
    option="kit profile",
    standalone=True,
    bookkeeping=True,
)
PRECISION_SEED = declare(
    "kit.precision_seed",
    "kit precision: seeds fixed, deterministic algorithms on and dropout off at start-up",
    "`msft_kit.precision_seed()` right after the imports calls msprobe's `seed_all(seed, "
    "mode=True, rm_dropout=True)` before any model or DataLoader exists, in the GPU script and "
    "the NPU script alike, so both compute the same step on the same data (MSFT_SEED, 1234 by "
    "default)." + _RUNTIME,
    opt_out=_KEEP,
    option="kit precision",
    standalone=True,
    bookkeeping=True,
)
PRECISION_START = declare(
    "kit.precision_start",
    "kit precision: msprobe's PrecisionDebugger made right before the training loop",
    "`msft_kit.precision_begin()` makes `msprobe.pytorch.PrecisionDebugger` with "
    "msprobe_config.json (written next to the script; MSFT_PRECISION_CONFIG overrides it) "
    "dumping into MSFT_PRECISION_DUMP." + _RUNTIME,
    opt_out=_KEEP,
    option="kit precision",
    standalone=True,
    bookkeeping=True,
)
PRECISION_STEP = declare(
    "kit.precision_step",
    "kit precision: the first training step dumped, then the run stops",
    "`msft_kit.precision_tick()` is the loop body's first statement: at the first iteration it "
    "starts the debugger, at the second it stops it (step 0's forward, backward and optimizer "
    "update are dumped) and ends the run. compare.sh compares the GPU and NPU dumps with "
    "`msprobe compare`." + _RUNTIME,
    opt_out=_KEEP,
    option="kit precision",
    standalone=True,
    bookkeeping=True,
)
ASSESS_START = declare(
    "kit.assess_start",
    "kit assess: the recording of torch API calls armed right before the training loop",
    "`msft_kit.assess_begin()` prepares the assessment of the original script (not migrated: "
    "it runs where the project runs today, GPU or CPU): the torch APIs called during each of "
    "the first `MSFT_ASSESS_STEPS` training steps (5 by default), by the script or any "
    "library, are recorded with the dtypes and shapes of their tensor arguments, and compared "
    "with the target version's operator support (`msft_ops.json`, written next to the script "
    "from the tool's tables)." + _RUNTIME,
    opt_out=_KEEP,
    option="kit assess",
    standalone=True,
    bookkeeping=True,
)
ASSESS_STEP = declare(
    "kit.assess_step",
    "kit assess: each training step recorded; the run stops after the last one",
    "`msft_kit.assess_tick()` is the loop body's first statement: it closes the step that just "
    "finished and opens the next; after `MSFT_ASSESS_STEPS` steps it writes "
    "`MSFT_ASSESS_DIR/ops.csv` (one row per API: calls, dtypes, shapes, whether the shapes "
    "change between steps, NPU support, where the project reaches it) and `report.html`, and "
    "ends the run." + _RUNTIME,
    opt_out=_KEEP,
    option="kit assess",
    standalone=True,
    bookkeeping=True,
)
ASSESS_END = declare(
    "kit.assess_end",
    "kit assess: the recording paused when the training loop ends",
    "`msft_kit.assess_end()` right after the training loop: a loop that ends (or breaks) "
    "before `MSFT_ASSESS_STEPS` steps pauses the recording, so what runs after it (an "
    "evaluation, the next epoch's set-up) is not counted as a training step; the next "
    "iteration of the loop (the next epoch) resumes it, and the summary says how many steps "
    "the loop ran. A `return` inside the loop skips this call: the recording then goes on "
    "until the next step or the end of the run." + _RUNTIME,
    opt_out=_KEEP,
    option="kit assess",
    standalone=True,
    bookkeeping=True,
)
OVERFLOW_START = declare(
    "kit.overflow_start",
    "kit overflow: every operator's output checked for inf/nan from right before the training loop",
    "`msft_kit.overflow_begin()` starts the porting guide's operator overflow detection "
    "(单算子溢出检测) on the migrated script: msft_overflow.py, written next to the script, "
    "checks the floating-point outputs of every operator (forward, backward, the optimizer's "
    "update) through a `TorchDispatchMode` (torch only, no msprobe). The first operator whose "
    "output holds inf or nan while its inputs are finite is the overflow: an operator fed inf "
    "or nan (a `-inf` attention mask, data holding nan) is not." + _RUNTIME,
    opt_out=_KEEP,
    option="kit overflow",
    standalone=True,
    bookkeeping=True,
)
OVERFLOW_STEP = declare(
    "kit.overflow_step",
    "kit overflow: each training step counted; the run stops after the step that overflowed",
    "`msft_kit.overflow_tick()` is the loop body's first statement: it numbers the step about "
    "to run; after the step in which an operator overflowed, or after `MSFT_OVERFLOW_STEPS` "
    "steps (10 by default) without one, it ends the run. `MSFT_OVERFLOW_DIR/overflow.json` "
    "names the operator (`aten.mul.Tensor`), what it produced, its dtype and shape, the step "
    "and the call site in the project (file, line, code, the project's frames)." + _RUNTIME,
    opt_out=_KEEP,
    option="kit overflow",
    standalone=True,
    bookkeeping=True,
)
# per kit: (the begin call's rule, the tick's rule)
KIT_RULES = {
    "aoe": (AOE_DUMP, AOE_STOP),
    "profile": (PROFILE_START, PROFILE_STEP),
    "precision": (PRECISION_START, PRECISION_STEP),
    "assess": (ASSESS_START, ASSESS_STEP),
    "overflow": (OVERFLOW_START, OVERFLOW_STEP),
}
_CALLS_KIT = re.compile(rb"^\s*import msft_kit\b", re.M)
_TORCH_NPU = re.compile(rb"^\s*(?:import|from)\s+torch_npu\b", re.M)


class KitEdits(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        self.kind: str = ctx.options.kit
        self.loop_line = 0  # 0: no loop found (refused)
        self.loop_id: int | None = None

    def visit_Module(self, node: cst.Module) -> None:
        source = self.ctx.source
        if _CALLS_KIT.search(source):  # a kit's output: its calls are there already
            return
        if is_tensorflow(source):  # through the environment: no call (kit_checks.py)
            tensorflow_notices(self.ctx, source, self.kind)
            return
        if self.ctx.options.kit_only and _TORCH_NPU.search(source):
            what = "assess kit records" if self.kind == "assess" else "precision kit's GPU side is"
            message = (
                f"the script imports torch_npu: the {what} the original GPU script, give the "
                "project before its migration"
            )
            self.ctx.warn((1, 1), NO_LOOP, message)
            return
        try:  # (the GPU side's script reached no span pass: LibCST may read what Python cannot)
            loop = find_training_loop(tree := ast.parse(source), self.ctx.path)
        except NoTrainingLoop as exc:
            self.ctx.warn((1, 1), NO_LOOP, str(exc))
            return
        except SyntaxError as exc:
            line = exc.lineno or 1
            self.ctx.warn((line, line), NO_LOOP, f"this Python cannot parse it: {exc.msg}")
            return
        if check_script(self.ctx, tree, self.kind, loop):
            self.loop_line = loop.line

    def _is_loop(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.For, cst.While)) and self.loop_line:
            return self.ctx.lines(node)[0] == self.loop_line
        return False

    def visit_For(self, node: cst.For) -> None:
        if self._is_loop(node):
            self.loop_id = id(node)

    visit_While = visit_For  # noqa: N815 (LibCST's names)

    def _loop_body(
        self, original: cst.For | cst.While, updated: cst.For | cst.While
    ) -> cst.For | cst.While:
        block = original.body
        if id(original) != self.loop_id or not isinstance(block, cst.IndentedBlock):
            return updated
        assert isinstance(updated.body, cst.IndentedBlock)  # as the original's
        first = block.body[0]
        rule = KIT_RULES[self.kind][1]
        code = f"msft_kit.{self.kind}_tick()"
        message = "the step just finished is counted; the run stops when the kit is done"
        body = list(updated.body.body)
        body[0:1] = _before(body[0], [code])
        self.ctx.record_insert(_anchor(self.ctx, first), rule, message, code)
        return updated.with_changes(body=updated.body.with_changes(body=body))

    def leave_For(self, original: cst.For, updated: cst.For) -> cst.For:
        result = self._loop_body(original, updated)
        assert isinstance(result, cst.For)
        return result

    def leave_While(self, original: cst.While, updated: cst.While) -> cst.While:
        result = self._loop_body(original, updated)
        assert isinstance(result, cst.While)
        return result

    def _begin(
        self, originals: Sequence[cst.BaseStatement], body: list[cst.BaseStatement]
    ) -> list[cst.BaseStatement]:
        """The begin call before the loop, if the loop is one of ``originals``."""
        index = next((i for i, s in enumerate(originals) if id(s) == self.loop_id), None)
        if index is None:
            return body
        rule = KIT_RULES[self.kind][0]
        code = f"msft_kit.{self.kind}_begin()"
        message = f"the {self.kind} kit begins before the first training step"
        self.ctx.record_insert(_anchor(self.ctx, originals[index]), rule, message, code)
        after: list[cst.BaseStatement] = []
        if self.kind == "assess":  # right after the loop (and its else), where a break lands
            end, last = "msft_kit.assess_end()", self.ctx.lines(originals[index])[1]
            message = "the recording pauses when the loop ends before the last step"
            self.ctx.record_insert(last + 1, ASSESS_END, message, end)
            after = [cst.parse_statement(end + "\n")]
        return body[:index] + _before(body[index], [code]) + after + body[index + 1 :]

    def leave_IndentedBlock(
        self, original: cst.IndentedBlock, updated: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return updated.with_changes(body=self._begin(original.body, list(updated.body)))

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        if not self.loop_line:
            return updated
        imports = 0
        while imports < len(original.body) and is_import_or_doc(original.body[imports], imports):
            imports += 1
        lines: list[tuple[str, str, str]] = [
            ("import msft_kit", IMPORT, f"the {self.kind} kit's runtime (msft_kit.py)")
        ]
        if self.kind == "precision":
            message = "seeds fixed before any model or data exists (the same on both sides)"
            lines.append(("msft_kit.precision_seed()", PRECISION_SEED, message))
        if imports:
            anchor = self.ctx.lines(original.body[imports - 1])[1] + 1
        else:  # no import: the calls open the module, above its first statement's comments
            anchor = _anchor(self.ctx, original.body[0]) if original.body else 1
        # recorded before a begin call at the same place (a module-level loop right after the
        # imports), after `import torch_npu` (stage 4's, recorded as the first at its place)
        for code, rule, message in lines:
            self.ctx.record_insert(anchor, rule, message, code)
        body = self._begin(original.body, list(updated.body))
        statements = [cst.parse_statement(code + "\n") for code, _, _ in lines]
        if imports:
            body[imports:imports] = statements
        else:
            body[0:1] = _before(body[0], [code for code, _, _ in lines]) if body else statements
        return updated.with_changes(body=body)


def _before(statement: cst.BaseStatement, codes: list[str]) -> list[cst.BaseStatement]:
    """``codes`` as statements right before ``statement`` and the comments above it (they stay
    with the code they describe); the blank lines above those move above the new ones."""
    new = [cst.parse_statement(code + "\n") for code in codes]
    blanks, comments = _leading(statement)
    new[0] = new[0].with_changes(leading_lines=blanks)
    return [*new, statement.with_changes(leading_lines=comments)]


def _anchor(ctx: MigrationContext, statement: cst.BaseStatement) -> int:
    """The input line ``_before`` inserts at: the first comment line above ``statement``, or its
    own first line (its first decorator's, for a decorated definition)."""
    decorators = getattr(statement, "decorators", ())
    first = ctx.lines(decorators[0] if decorators else statement)[0]
    return first - len(_leading(statement)[1])


def _leading(statement: cst.BaseStatement) -> tuple[list[cst.EmptyLine], list[cst.EmptyLine]]:
    """The lines above ``statement``: the blank ones before its first comment, and the rest."""
    leading = list(getattr(statement, "leading_lines", ()))  # every statement has them
    blanks = next((i for i, line in enumerate(leading) if line.comment is not None), len(leading))
    return leading[:blanks], leading[blanks:]
