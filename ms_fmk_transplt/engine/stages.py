"""The stages of a file migrated with structural options (-r, -sim, distributed -m).

The built-in rules (and -s) are the span pass's alone (engine/spans/); LibCST runs only what
changes program structure, each as a stage of its own over the text the previous one produced:

1. ``-r`` user rules (LibCST) on the file as written: the built-in rules see their result, so a
   user rule on ``torch.cuda.X`` matches before the built-ins rename it;
2. the span pass, over that text;
3. ``-sim`` and ``distributed -m`` (LibCST) over the span pass's output: their Before text shows
   the built-in rewrites of what they replace, the device strings they bind are already NPU
   strings, and an open-work row the span pass made for what they replaced (a FlashAttention
   call, ``nn.DataParallel``) is withdrawn;
4. ``import torch_npu`` and the helper lines (span pass, engine/rules/imports/torch_npu_spans.py),
   once, for the changes of every stage.

Events are recorded in the lines of the stage's input; stage 3 and 4 inserts are given back in
the lines of stage 2's input, so the finishing steps (engine/migrate.py) see one list.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import MetadataWrapper

from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.cst_names import CstNames
from ms_fmk_transplt.engine.options import EngineOptions
from ms_fmk_transplt.engine.recorder import shift_line
from ms_fmk_transplt.engine.rules import registry
from ms_fmk_transplt.engine.rules.family_exports import parse
from ms_fmk_transplt.engine.scope_model import UnsupportedScope
from ms_fmk_transplt.engine.spans.span_pass import PassOutput, import_pass, span_pass
from ms_fmk_transplt.engine.transformer import MigrationTransformer
from ms_fmk_transplt.events import ChangeEvent, FileResult, Notice
from ms_fmk_transplt.tables import Tables


@dataclass(frozen=True)
class Plan:
    """The LibCST stages a file needs: stage 1's concerns (-r) and stage 3's."""

    before: tuple[type[Concern], ...]
    after: tuple[type[Concern], ...]

    def families(self) -> list[str]:
        """The rule families of the stages that run, in order (``user_rules``, ``similar``,
        ``distributed_mode``, ``kit``)."""
        return registry.stage_families((*self.before, *self.after))

    def options(self) -> list[str]:
        """The options of those families, in order (``-r``, ``-sim``, ...)."""
        return registry.stage_options((*self.before, *self.after))


def plan(code: bytes, tables: Tables, options: EngineOptions) -> Plan:
    """The stages that may act on ``code``, as their families say (Family.cst_stage): each runs
    only on a file that spells every name of one of its APIs or rules as a whole word
    (``torch.optim.Adam``: torch, optim, Adam)."""
    return Plan(*registry.cst_stages(code, tables, options))


@dataclass
class _CstStage:
    output: bytes
    ctx: MigrationContext


def _run_cst(
    source: bytes,
    path: str,
    tables: Tables,
    options: EngineOptions,
    concerns: tuple[type[Concern], ...],
) -> _CstStage | FileResult:
    """One LibCST traversal of ``source`` with ``concerns`` (a FileResult when LibCST cannot
    parse it). Names are resolved by engine/scopes.py."""
    module = parse(source, path, tables)
    if isinstance(module, FileResult):
        return module
    ctx = MigrationContext(path, module, tables, options, source)
    ctx.open_work_rule = registry.open_work_rule
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    ctx.bind(wrapper)
    try:
        ctx.use_names(CstNames(source))
    except (SyntaxError, ValueError, RecursionError, UnsupportedScope):
        pass  # syntax this Python cannot parse (LibCST can): LibCST resolves the names
    new = wrapper.module.visit(MigrationTransformer(ctx, concerns))
    return _CstStage(new.bytes if ctx.events else source, ctx)


def staged(
    source: bytes,
    path: str,
    tables: Tables,
    options: EngineOptions,
    stages: Plan,
) -> PassOutput | FileResult:
    """Migrates one file with structural options (``stages``: plan(source, ...)); raises what
    span_pass raises."""
    if options.kit_only:  # the GPU side of the precision kit: the file as written, plus the calls
        return _kit_only(source, path, tables, options, stages.after)
    code, first_events, first_notices = source, list[ChangeEvent](), list[Notice]()
    after = stages.after
    named = False  # whether -r made the file name torch_npu (it then needs the import)
    if stages.before:
        first = _run_cst(source, path, tables, options, stages.before)
        if isinstance(first, FileResult):
            return first
        code, first_events, first_notices = first.output, first.ctx.events, first.ctx.notices
        named = first.ctx.needs_torch_npu
    done = span_pass(code, path, tables, options, insert_imports=not after, torch_npu_named=named)
    if after:
        done = _after_span_pass(done, path, tables, options, after)
    done.events[:0] = first_events
    done.notices[:0] = first_notices
    if code is not source:
        done.tree = None  # a tree of other bytes than the file's
        done.parse_check = True
    return done


def _kit_only(
    source: bytes,
    path: str,
    tables: Tables,
    options: EngineOptions,
    concerns: tuple[type[Concern], ...],
) -> PassOutput | FileResult:
    """The kit's calls (``concerns``) in the file as written: no migration, no ``import
    torch_npu``."""
    done = _run_cst(source, path, tables, options, concerns)
    if isinstance(done, FileResult):  # LibCST cannot read it: reported as such
        return done
    ctx = done.ctx
    return PassOutput(done.output, ctx.events, ctx.notices, ctx.line_inserts, ctx.insert_order)


def _after_span_pass(
    spans: PassOutput,
    path: str,
    tables: Tables,
    options: EngineOptions,
    concerns: tuple[type[Concern], ...],
) -> PassOutput:
    """Stages 3 and 4 over the span pass's output. Their lines are given back in the lines of
    the span pass's input: through the lines the span pass inserted (a TensorFlow file's adapter
    import), and for stage 4 first through stage 3's."""
    third = _run_cst(spans.output, path, tables, options, concerns)
    if isinstance(third, FileResult):  # cannot happen: LibCST reads what the span pass wrote
        raise RuntimeError(f"{path}: the span pass's output does not parse")
    ctx = third.ctx
    back = _lines_back(spans.line_inserts)  # stage 3's input line -> the span pass's input line
    notices = _withdrawn(spans.notices, ctx, back)
    # (the span pass needs torch_npu without a change of its own when -r's changes need it)
    changed = bool(spans.events or ctx.events) or spans.needs_torch_npu
    wanted = (changed, spans.needs_torch_npu or ctx.needs_torch_npu)
    helpers = spans.helper_lines + ctx.helper_lines
    last = import_pass(third.output, path, tables, options, wanted, helpers)
    third_back = _lines_back(ctx.line_inserts)

    def from_last(line: int) -> int:
        return back(third_back(line))

    inserts, order = list(spans.line_inserts), list(spans.insert_order)
    for stage, to_input in ((ctx, back), (last, from_last)):
        for (anchor, count), (_, first, _) in zip(stage.line_inserts, stage.insert_order):
            anchor = to_input(anchor)
            inserts.append((anchor, count))
            order.append((anchor, first, len(order)))
    events = spans.events + [_moved(e, back) for e in ctx.events]
    events += [_moved(e, from_last) for e in last.events]
    third_notices = [_moved_notice(n, back) for n in ctx.notices]
    return PassOutput(
        last.output,
        events,
        # in line order, as the one traversal of both that preceded the stages recorded them
        list(heapq.merge(notices, third_notices, key=lambda n: n.line)),
        inserts,
        order,
        tree=spans.tree,
        framework=spans.framework,
    )


def _withdrawn(
    notices: list[Notice], ctx: MigrationContext, back: Callable[[int], int]
) -> list[Notice]:
    """The span pass's rows without those for code stage 3 took over (the nodes it claimed:
    the FlashAttention calls -sim replaced, the DataParallel wrapper distributed removed)."""
    if not ctx.claimed:
        return notices
    imported = _imported_names(ctx.module)
    taken: set[tuple[int, str]] = set()
    for node in ctx.claimed:
        name = imported.get(id(node)) or ctx.qname(node)
        if name:
            first, last = ctx.lines(node)
            taken.update((back(line), name) for line in range(first, last + 1))
    return [n for n in notices if (n.line, n.api) not in taken]


def _imported_names(module: cst.Module) -> dict[int, str]:
    """id(alias) -> the qualified name a ``from m import x`` alias imports."""
    names: dict[int, str] = {}

    class Collect(cst.CSTVisitor):
        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
                return
            base = get_full_name_for_node(node.module)
            for alias in node.names:
                names[id(alias)] = f"{base}.{get_full_name_for_node(alias.name)}"

    module.visit(Collect())
    return names


def _input_line(line: int, inserts: list[tuple[int, int]]) -> int:
    """The input line at whose place output line ``line`` of a stage that inserted ``inserts``
    lies: the first input line that lands on or after it."""
    guess = max(1, line - sum(count for _, count in inserts))
    while shift_line(guess, inserts) < line:
        guess += 1
    return guess


def _lines_back(inserts: list[tuple[int, int]]) -> Callable[[int], int]:
    """Output line -> input line of a stage that inserted ``inserts`` (none: the same line)."""
    if not inserts:
        return lambda line: line
    return lambda line: _input_line(line, inserts)


def _moved(event: ChangeEvent, to_input: Callable[[int], int]) -> ChangeEvent:
    start, end = to_input(event.start_line), to_input(event.end_line)
    if (start, end) == (event.start_line, event.end_line):
        return event
    return dataclasses.replace(event, start_line=start, end_line=end)


def _moved_notice(notice: Notice, to_input: Callable[[int], int]) -> Notice:
    line = to_input(notice.line)
    end = to_input(notice.end_line) if notice.end_line else 0
    if (line, end) == (notice.line, notice.end_line):
        return notice
    return dataclasses.replace(notice, line=line, end_line=end)
