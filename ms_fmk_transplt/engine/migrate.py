"""Migrating one file: ``migrate_source(source, path, tables)`` returns the migrated bytes with the
structured events describing each change. It never touches the file system.

Cheap gates first (opt-out comment, pre-filter, size and nesting guards); then the span pass
(engine/spans/), the one implementation of the built-in rules (and -s), which rewrites by byte
spans on the stdlib ``ast`` and reports a file Python cannot read (parse.*); with -r, -sim or
distributed -m, the LibCST stages of those options around it (engine/stages.py); then the
finishing steps (opt-out lines, output line numbers, the check that the output parses).
"""

from __future__ import annotations

import ast
import dataclasses
import gc
import operator
import time
from collections import Counter
from typing import TYPE_CHECKING

from ms_fmk_transplt.catalogue.rule_catalog import (
    ANSWERS_API,
    ANSWERS_LINE,
    answered_advice,
    rule_matches,
    stands_alone,
)
from ms_fmk_transplt.engine.line_map import LineMap
from ms_fmk_transplt.engine.options import DEFAULT_OPTIONS, EngineOptions, kept_rule
from ms_fmk_transplt.engine.prefilter import may_need_migration
from ms_fmk_transplt.engine.program_facts import ProgramFacts
from ms_fmk_transplt.engine.rules import registry
from ms_fmk_transplt.engine.rules.family_exports import (
    IGNORE_LINE,
    LIMIT,
    SKIP,
    bidi_notices,
    ignored_lines,
    refusal,
    skip_file_line,
    too_large,
)
from ms_fmk_transplt.engine.rules.family_spec import Folding
from ms_fmk_transplt.engine.skipped_file import skipped
from ms_fmk_transplt.engine.spans.decline import Unreadable
from ms_fmk_transplt.engine.spans.shared_tree import share
from ms_fmk_transplt.engine.target_scan import target_notices
from ms_fmk_transplt.events import ChangeEvent, FileResult, FileStatus, Notice, Operation, Severity
from ms_fmk_transplt.safety.chunks import pieces
from ms_fmk_transplt.safety.tree_depth import TooDeep, check_source, recursion_room
from ms_fmk_transplt.tables import Tables

if TYPE_CHECKING:  # the span pass and its families are imported by the first file parsed: a
    # file the gates settle (nothing to migrate, opted out, too large) loads none of them
    from ms_fmk_transplt.engine.spans.span_pass import PassOutput


def migrate_source(
    source: bytes, path: str, tables: Tables, options: EngineOptions | None = None
) -> FileResult:
    """``tables``: the target version's tables, loaded once by the run and handed down."""
    # A file's trees, events and edits make up to millions of objects, none of them in a
    # reference cycle: the cyclic garbage collector would only scan them again and again (it
    # made parsing a 10 MB file take 14 s instead of 2 s).
    collecting = gc.isenabled()
    gc.disable()
    try:
        with recursion_room():
            return _migrate(source, path, tables, options)
    finally:
        share(source, None)  # the span pass's tree, kept for the folding of the rows
        if collecting:
            gc.enable()


def fold_file_rows(
    notices: list[Notice], source: bytes, tables: Tables, options: EngineOptions
) -> list[Notice]:
    """The file's rows, each family's folded as it says; the lines a folded row lists are
    those its own row names (the migrated file's, --analyse's and --check's input lines)."""
    return registry.fold_rows(notices, Folding(source, tables, options, not options.input_lines))


def _migrate(source: bytes, path: str, tables: Tables, options: EngineOptions | None) -> FileResult:
    start = time.perf_counter()
    options = options or DEFAULT_OPTIONS
    bidi = bidi_notices(source, path, tables)
    result = _gates(source, path, tables, options)
    gated = time.perf_counter()
    if result is not None:
        if bidi and not any(n.rule == SKIP for n in result.notices):
            result.notices.extend(_kept_notices(source, bidi, options))
        if len(result.notices) > 1:  # (what the target version says: folded as in any file)
            folding = Folding(source, tables, options, migrated=not options.input_lines)
            result.notices[:] = registry.fold_rows(result.notices, folding)
        result.timings["prefilter"] = gated - start
        return result
    from ms_fmk_transplt.engine.spans.span_pass import PassOutput

    try:
        done, stages = _one_pass(source, path, tables, options)
    except TooDeep as exc:
        done, stages = skipped(path, source, exc.line, LIMIT, str(exc), tables), ""
    if isinstance(done, PassOutput):
        done.notices.extend(bidi)
        done.notices.extend(_scanned(source, path, tables, done, options))
    else:
        done.notices.extend(_kept_notices(source, bidi, options))
    analysed = time.perf_counter()
    result = done if isinstance(done, FileResult) else _finish(source, path, done, options)
    # each family's rows folded as it says (one row per file and library, ...), of the rows
    # _finish kept, naming the lines reports name
    if options.fold_rows:
        result.notices[:] = fold_file_rows(result.notices, source, tables, options)
    result.libcst_stages = stages
    if isinstance(done, PassOutput):
        result.framework = done.framework
    result.timings.update(
        prefilter=gated - start, analyse=analysed - gated, rewrite=time.perf_counter() - analysed
    )
    return result


def _scanned(
    source: bytes, path: str, tables: Tables, done: PassOutput, options: EngineOptions
) -> list[Notice]:
    """What the target version says of the code, without the advice a change made moot (its
    rule's ``answers``: -sim replaced the code, a -r rule renamed the API away, a change did
    what the advice says)."""
    replaced: set[int] = set()  # lines where any advice is moot
    renamed: set[tuple[int, str]] = set()  # (line, API) advice about the API is moot
    answered: set[tuple[int, str]] = set()  # (line, advice id)
    for e in done.events:
        answer = answered_advice(e.rule)
        if not answer:
            continue
        lines = range(e.start_line, e.end_line + 1)
        if answer == ANSWERS_LINE:
            replaced.update(lines)
        elif answer == ANSWERS_API:
            renamed.add((e.start_line, e.before))
        else:
            answered.update((line, answer) for line in lines)
    return [
        n
        for n in target_notices(
            source, path, tables, done.tree, frozenset(answered), _programs(options)
        )
        or []
        if not (n.advice and (n.line in replaced or (n.line, n.api) in renamed))
    ]


def _programs(options: EngineOptions) -> ProgramFacts | None:
    """The run's program model (None for one file at a time: the path modes, the docs)."""
    return options.project.programs if options.project is not None else None


def _kept_notices(source: bytes, notices: list[Notice], options: EngineOptions) -> list[Notice]:
    """``notices`` without those --select/--ignore or a line's `# msft: ignore` drop (for a
    file no pass analysed: _finish does this for the others)."""
    if not notices:
        return notices
    ignored = ignored_lines(source)
    return [
        n
        for n in notices
        if kept_rule(n.rule, options) and not _is_ignored(n.line, n.rule, ignored)
    ]


def _one_pass(
    source: bytes, path: str, tables: Tables, options: EngineOptions
) -> tuple[PassOutput | FileResult, str]:
    """The span pass, with the LibCST stages of the structural options around it (stages.py),
    and the names of those stages that ran; raises TooDeep."""
    from ms_fmk_transplt.engine.spans.span_pass import span_pass, supports

    try:
        if supports(options):
            return span_pass(source, path, tables, options), ""
        from ms_fmk_transplt.engine.stages import plan, staged

        stages = plan(source, tables, options)
        families = stages.families()
        if families:
            names = ", ".join(stages.options())
            large = too_large(source, options.max_cst_bytes, f" for the LibCST stage of {names}")
            if large is not None:
                return skipped(path, source, 1, LIMIT, large, tables), ""
            check_source(source)  # LibCST's native parser crashes on deep input
        return staged(source, path, tables, options, stages), ",".join(families)
    except Unreadable as exc:
        return skipped(path, source, exc.line, exc.rule, exc.message, tables, exc.newer_python), ""


def _gates(source: bytes, path: str, tables: Tables, options: EngineOptions) -> FileResult | None:
    """The result for a file the cheap checks settle: opted out, nothing any rule acts on,
    beyond the guards. None when the file must be parsed."""
    skip_line = skip_file_line(source)
    if skip_line:
        kept = Notice(
            path, skip_line, SKIP, Severity.INFO, "file left as it is (# msft: skip-file)"
        )
        return FileResult(path, FileStatus.UNCHANGED, source, notices=[kept], analysed=False)
    main = options.distributed_target is not None or options.kit
    if not main and not may_need_migration(source, tables, options, path):
        # nothing to migrate; what the target version says of the code is still reported
        scanned = None
        if len(source) <= options.max_file_bytes:
            scanned = target_notices(source, path, tables, programs=_programs(options))
            if scanned and (options.select or options.ignore):
                scanned = [n for n in scanned if kept_rule(n.rule, options)]
        return FileResult(
            path, FileStatus.UNCHANGED, source, notices=scanned or [], analysed=scanned is not None
        )
    refused = refusal(source, options.max_file_bytes)
    if refused is not None:
        return skipped(path, source, 1, LIMIT, refused, tables)
    return None


def _finish(
    source: bytes, path: str, done: PassOutput, options: EngineOptions = DEFAULT_OPTIONS
) -> FileResult:
    notices = done.notices
    ignored = ignored_lines(source) if done.events or notices else {}
    comments = set(ignored)  # lines whose ignore comment gets a note (optout.ignore)
    if done.events or notices:  # the CUDA arm of a chain with an NPU arm stays as written
        from ms_fmk_transplt.engine.spans.npu_siblings import cuda_arm_lines

        for line in cuda_arm_lines(source):
            ignored.setdefault(line, None)
    if options.select or options.ignore:
        ignored = _with_selection(ignored, done.events, notices, options)
    if ignored:
        notices, dropped_rows = _drop_ignored_rows(notices, ignored)
    if not done.events:
        if ignored:
            notices += _kept_lines(path, Counter(), dropped_rows, comments)
        return FileResult(path, FileStatus.UNCHANGED, source, notices=notices)
    output = _keep_final_cr(source, done.output)
    line_of = LineMap(source, output, done.line_inserts)
    events = _with_output_lines(done.events, done.line_inserts, done.insert_order, line_of)
    if ignored:
        output, events, kept, dropped_changes = _apply_ignores(
            source, output, events, ignored, line_of
        )
        notices += _kept_lines(path, dropped_changes, dropped_rows, comments)
        if not kept:
            return FileResult(path, FileStatus.UNCHANGED, source, notices=notices)
    if done.parse_check:
        _check_parses(source, output)
    events.sort(key=lambda e: (e.out_start_line, e.start_line, e.rule))
    notices = [
        dataclasses.replace(
            n,
            out_line=line_of(n.line),
            out_end_line=line_of(max(n.line, n.end_line)),
        )
        for n in notices
    ]
    return FileResult(path, FileStatus.CHANGED, output, events=events, notices=notices)


def _with_selection(
    ignored: dict[int, frozenset[str] | None],
    events: list[ChangeEvent],
    notices: list[Notice],
    options: EngineOptions,
) -> dict[int, frozenset[str] | None]:
    """--select / --ignore as if each line carried `# msft: ignore[<the rules not kept>]`."""
    out = dict(ignored)
    lines = [(e.start_line, e.rule) for e in events if e.operation != Operation.INSERT]
    for line, rule in [*lines, *((n.line, n.rule) for n in notices)]:
        if kept_rule(rule, options):
            continue
        if line not in out:
            out[line] = frozenset({rule})
        elif (rules := out[line]) is not None:
            out[line] = rules | {rule}
    return out


def _drop_ignored_rows(
    notices: list[Notice], ignored: dict[int, frozenset[str] | None]
) -> tuple[list[Notice], Counter[int]]:
    """The notices of lines not opted out, and how many were dropped per line."""
    kept, dropped = [], Counter[int]()
    for n in notices:
        if _is_ignored(n.line, n.rule, ignored):
            dropped[n.line] += 1
        else:
            kept.append(n)
    return kept, dropped


def _kept_lines(
    path: str, changes: Counter[int], rows: Counter[int], comments: set[int]
) -> list[Notice]:
    """One INFO notice per line an ignore comment kept (rule optout.ignore)."""
    out = []
    for line in sorted((set(changes) | set(rows)) & comments):
        what = [
            f"{count} {noun}{'s' if count > 1 else ''}"
            for count, noun in ((changes[line], "change"), (rows[line], "row"))
            if count
        ]
        message = f"line kept as written (# msft: ignore): {' and '.join(what)} dropped"
        out.append(Notice(path, line, IGNORE_LINE, Severity.INFO, message))
    return out


def _check_parses(source: bytes, output: bytes) -> None:
    """The migrated file must parse: fail loudly here, never write it. The stdlib parser
    checks; for syntax newer than this Python (which LibCST reads), LibCST checks."""
    try:
        _parse_quickly(output)
    except SyntaxError:
        try:
            ast.parse(source)
        except SyntaxError:
            import libcst as cst

            cst.parse_module(output)
            return
        raise


def _parse_quickly(data: bytes) -> None:
    """ast.parse, piece by piece for a large file (safety/chunks.py), without the cyclic
    garbage collector (see engine/spans/span_pass.py)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        for _ in pieces(data):
            pass
    finally:
        if collecting:
            gc.enable()


def _keep_final_cr(source: bytes, output: bytes) -> bytes:
    """LibCST drops the final newline of a file whose lines end with a bare CR (old Mac
    style): ``parse_module(b"x = 1\\r").bytes == b"x = 1"``. Found by the generated-program
    tests; give the byte back."""
    if source.endswith(b"\r") and not output.endswith((b"\r", b"\n")):
        return output + b"\r"
    return output


def _is_ignored(line: int, rule: str, ignored: dict[int, frozenset[str] | None]) -> bool:
    if line not in ignored:
        return False
    rules = ignored[line]
    return rules is None or rule_matches(rule, rules)


def _apply_ignores(
    source: bytes,
    output: bytes,
    events: list[ChangeEvent],
    ignored: dict[int, frozenset[str] | None],
    line_of: LineMap,
) -> tuple[bytes, list[ChangeEvent], list[ChangeEvent], Counter[int]]:
    """Give `# msft: ignore` lines back their original text and drop their rows."""
    src_lines = source.splitlines(keepends=True)
    out_lines = output.splitlines(keepends=True)
    by_line: dict[int, list[ChangeEvent]] = {}
    for e in events:
        if e.operation != Operation.INSERT:
            for line in range(e.start_line, e.end_line + 1):
                by_line.setdefault(line, []).append(e)
    dropped: set[int] = set()
    counts: Counter[int] = Counter()
    for line in ignored:
        on_line = by_line.get(line, [])
        if on_line and all(_is_ignored(line, e.rule, ignored) for e in on_line):
            out_lines[line_of(line) - 1] = src_lines[line - 1]
            dropped.update(id(e) for e in on_line)
            counts[line] = len(on_line)
    events = [e for e in events if id(e) not in dropped]
    # (an insert that follows from other changes, `import torch_npu`, is no change by itself;
    # one the user asked for, a kit's call, is)
    kept = [e for e in events if e.operation != Operation.INSERT or stands_alone(e.rule)]
    return b"".join(out_lines), events, kept, counts


def _with_output_lines(
    events: list[ChangeEvent],
    inserts: list[tuple[int, int]],
    order: list[tuple[int, int, int]],
    line_of: LineMap,
) -> list[ChangeEvent]:
    out = []
    queue = iter(zip(inserts, order))
    at_anchor: dict[int, list[tuple[tuple[int, int, int], int]]] = {}
    for (a, c), k in zip(inserts, order):
        at_anchor.setdefault(a, []).append((k, c))
    for event in events:
        if event.operation == Operation.INSERT:
            (anchor, count), key = next(queue)
            # right above the anchor line, below the inserts at the same anchor recorded before
            later = sum(c for k, c in at_anchor[anchor] if k >= key)
            start = line_of(anchor) - later
            out.append(_placed(event, start, start + count - 1))
        else:
            out.append(_placed(event, line_of(event.start_line), line_of(event.end_line)))
    return out


_EVENT_FIELDS = tuple(f.name for f in dataclasses.fields(ChangeEvent))
_event_values = operator.attrgetter(*_EVENT_FIELDS)
_OUT_LINES = (_EVENT_FIELDS.index("out_start_line"), _EVENT_FIELDS.index("out_end_line"))


def _placed(event: ChangeEvent, start: int, end: int) -> ChangeEvent:
    """``dataclasses.replace(event, out_start_line=start, out_end_line=end)``, twice as fast
    (a 10 MB file has 228,000 events): its fields read one by one (its ``__dict__`` would be
    made for good on each event: 22 MiB more at the 10 MB file's peak), the two set."""
    values = list(_event_values(event))
    values[_OUT_LINES[0]], values[_OUT_LINES[1]] = start, end
    return ChangeEvent(*values)
