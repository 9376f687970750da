"""The span pass: migrates one file by exact byte-span edits, without LibCST.

The only implementation of the built-in rules (and -s). The stdlib parser (C, about ten times
faster than LibCST) gives the tree; engine/scopes.py resolves names; only the statements that
hold an anchor word are walked, each concern of SPAN_CONCERNS acting on them in that order;
``import torch_npu`` and the options' helper lines are inserted last (or by import_pass, after
the LibCST stages of -sim / distributed: engine/stages.py). A file in another encoding, with a
byte order mark or bare CR line breaks is read as Python reads it (spans/source_encoding.py);
one Python cannot read raises Unreadable (reported, copied unchanged). A statement it does not
model is left as written with an engine.unmodelled row (spans/walker.py); the file never goes
elsewhere.
"""

from __future__ import annotations

import ast
import bisect
import gc
from dataclasses import dataclass, field

from ms_fmk_transplt.engine.options import EngineOptions
from ms_fmk_transplt.engine.rules import registry
from ms_fmk_transplt.engine.rules.family_exports import (
    insert_torch_npu,
    refused_by_cpython,
    undecodable,
)
from ms_fmk_transplt.engine.rules.family_spec import Finishing
from ms_fmk_transplt.engine.scope_model import UnsupportedScope
from ms_fmk_transplt.engine.scopes import Scopes
from ms_fmk_transplt.engine.spans.anchors import (
    TO_CALL_PATTERN,
    alias_pattern,
    anchor_bytes,
    anchor_lines,
)
from ms_fmk_transplt.engine.spans.decline import Unreadable
from ms_fmk_transplt.engine.spans.module_facts import ModuleFacts
from ms_fmk_transplt.engine.spans.shared_tree import share
from ms_fmk_transplt.engine.spans.source_encoding import Decoded, decode
from ms_fmk_transplt.engine.spans.source_text import SourceText
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.engine.spans.units import find_units
from ms_fmk_transplt.engine.spans.walker import Walker
from ms_fmk_transplt.events import ChangeEvent, Notice
from ms_fmk_transplt.safety import chunks
from ms_fmk_transplt.safety.chunks import Piece, parse_piece, pieces
from ms_fmk_transplt.safety.tree_depth import check_source, check_tree, parse_failure
from ms_fmk_transplt.tables import Tables


@dataclass
class PassOutput:
    """What a pass over one file produced, before the common finishing steps."""

    output: bytes
    events: list[ChangeEvent]
    notices: list[Notice]
    line_inserts: list[tuple[int, int]]
    insert_order: list[tuple[int, int, int]]
    parse_check: bool = True  # parse the output before it is written (see SpanContext.replace)
    tree: ast.Module | None = None  # the input's stdlib tree, when parsed in one piece
    # for a later stage when this pass left ``import torch_npu`` to it (insert_imports=False)
    needs_torch_npu: bool = False
    helper_lines: list[tuple[str, str, str]] = field(default_factory=list)
    framework: str = ""  # "tensorflow": the file imports TensorFlow (FileResult.framework)


def supports(options: EngineOptions) -> bool:
    """Whether the span pass alone migrates the file: the built-in rules and -s; with -r, -sim
    or distributed the LibCST stages run around it (engine/stages.py)."""
    structural = options.similar or options.distributed_target is not None or options.kit
    return options.user_rules is None and not structural


def span_concerns_for(ctx: SpanContext) -> tuple[type[SpanConcern], ...]:
    """The concerns of one file, in order (engine/rules/registry.py): a file that imports
    TensorFlow (``ctx.tf``) gets the tf family's, and the PyTorch ones only if it imports
    torch; a file the program model says is of no PyTorch program gets no PyTorch ones."""
    tf = ctx.tf
    project = ctx.options.project  # a file of no PyTorch program gets none (program model)
    pytorch = (tf is None or tf.torch) and (project is None or project.programs.pytorch(ctx.path))
    deps = project is not None and project.deps is not None  # (any file: it calls a library)
    return registry.span_concerns(
        ctx.options.specify_device and pytorch,
        tensorflow=tf is not None,
        pytorch=pytorch,
        deps=deps,
    )


def extra_anchor_words(ctx: SpanContext, source: bytes) -> tuple[str, ...]:
    """Anchor words of the families (see anchors.py; -s's, a TensorFlow file's), and the names
    of the CUDA extensions the project builds when ``source`` may import one (those are
    reported)."""
    words = registry.anchor_words(ctx)
    facts = ctx.options.project
    if facts is not None and facts.extension_import is not None:
        if facts.extension_import.search(source):
            words = words + tuple(w.decode() for w in facts.extension_words)
    return words


def span_pass(
    source: bytes,
    path: str,
    tables: Tables,
    options: EngineOptions,
    insert_imports: bool = True,
    torch_npu_named: bool = False,
) -> PassOutput:
    """Migrates one file; raises Unreadable for a file Python cannot read, TooDeep for a file
    beyond the depth guard. Without ``insert_imports``, ``import torch_npu`` and the helper
    lines are left to a later stage (import_pass, once the structural options have run).
    ``torch_npu_named``: an earlier stage (-r) changed the file to name torch_npu."""
    # The parser makes a million objects for a large file, none of them in a reference cycle:
    # the cyclic garbage collector would scan them again and again (a 10 MB file took 14 s to
    # parse instead of 2 s).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _span_pass(source, path, tables, options, insert_imports, torch_npu_named)
    finally:
        if collecting:
            gc.enable()


def import_pass(
    source: bytes,
    path: str,
    tables: Tables,
    options: EngineOptions,
    wanted: tuple[bool, bool],
    helper_lines: list[tuple[str, str, str]],
) -> PassOutput:
    """``import torch_npu`` and the helper lines, for the text the structural options produced
    (engine/stages.py): ``wanted`` says whether the earlier stages changed the file and whether
    a change needs torch_npu. (Called within migrate_source, which has the cyclic collector
    off.)"""
    decoded = decode(source)
    data = source if decoded is None else decoded.data
    text = SourceText(data)
    facts, _ = _parsed(source, data, text)
    ctx = SpanContext(path, tables, options, text, facts.imports)
    ctx.open_work_rule = registry.open_work_rule
    ctx.needs_torch_npu = wanted[1]
    ctx.helper_lines = list(helper_lines)
    insert_torch_npu(ctx, facts, changed=wanted[0])
    if facts.scopes is not None:
        facts.scopes.release()
    output = _edited(source, decoded, ctx)
    return PassOutput(output, ctx.events, [], ctx.line_inserts, ctx.insert_order)


def _edited(original: bytes, decoded: Decoded | None, ctx: SpanContext) -> bytes:
    """The file's bytes with the pass's edits, in its own encoding."""
    if not ctx.edits:
        return original
    if decoded is None:
        return ctx.edits.apply()
    return decoded.apply(original, ctx.edits.items)


def _parsed(
    original: bytes, source: bytes, text: SourceText
) -> tuple[ModuleFacts, list[tuple[Piece, ast.Module]]]:
    """The file's pieces and their trees and its module facts; raises TooDeep, Unreadable
    (what CPython refuses is reported, not migrated). A large file's first pieces keep their
    trees up to KEEP_BYTES of its source, and its last piece; the others are None: parsed again,
    one at a time."""
    facts = ModuleFacts(text)
    kept: list[tuple[Piece, ast.Module]] = []
    kept_bytes = 0
    try:
        for piece, tree in pieces(source):
            check_tree(tree, source)  # raises TooDeep: no recursion into a deep tree
            facts.add(tree)
            kept.append((piece, tree))
            if len(kept) > 1:  # a large file
                before, size = kept[-2][0], kept[-2][0][2] - kept[-2][0][1]
                if kept[-2][1] is not None and kept_bytes + size <= chunks.KEEP_BYTES:
                    kept_bytes += size
                else:
                    kept[-2] = (before, None)  # type: ignore[assignment]
        facts.done()
    except (MemoryError, RecursionError) as exc:
        raise parse_failure(exc) from exc
    except (SyntaxError, ValueError) as exc:
        check_source(source)  # raises TooDeep for brackets nested too deep (rule parse.limit)
        raise Unreadable(*refused_by_cpython(original, exc)) from exc
    except UnsupportedScope as exc:
        if exc.compile_error:  # e.g. nonlocal at module level
            raise Unreadable(*refused_by_cpython(original, exc)) from exc
        raise  # scopes.py models every other scope: an internal error
    return facts, kept


def _span_pass(
    original: bytes,
    path: str,
    tables: Tables,
    options: EngineOptions,
    insert_imports: bool,
    torch_npu_named: bool,
) -> PassOutput:
    try:
        decoded = decode(original)
    except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
        raise Unreadable(*undecodable(original, exc)) from exc
    source = original if decoded is None else decoded.data
    text = SourceText(source)
    facts, kept = _parsed(original, source, text)
    ctx = SpanContext(path, tables, options, text, facts.imports)
    ctx.open_work_rule = registry.open_work_rule
    ctx.needs_torch_npu = torch_npu_named
    patterns = [TO_CALL_PATTERN]
    aliases = alias_pattern(tables, ctx.import_bound)
    if aliases is not None:
        patterns.append(aliases)
    registry.read_file_facts(ctx, facts, source, kept)
    extra = extra_anchor_words(ctx, source)
    lines = anchor_lines(source, patterns, anchor_bytes(tables) + tuple(w.encode() for w in extra))
    concerns = span_concerns_for(ctx)
    share(source, kept[0][1] if len(kept) == 1 else None)
    try:
        for index, (piece, tree) in enumerate(kept):
            if len(kept) > 1:  # a large file: each piece's tree freed once it is walked
                kept[index] = (piece, None)  # type: ignore[assignment]
            last = piece[0] + source.count(b"\n", piece[1], piece[2])
            inside = lines[bisect.bisect_left(lines, piece[0]) : bisect.bisect_right(lines, last)]
            if not inside:
                continue  # (a piece without an anchor line is not parsed again)
            if tree is None:
                tree = parse_piece(source, piece)
            scopes = Scopes(tree, walrus=b":=" in source, global_scope=facts.global_scope)
            ctx.begin(scopes)
            walker = Walker(ctx, concerns, extra)
            for unit in find_units(tree, inside):
                walker.walk_unit(unit)
            scopes.release()
            del tree, scopes, walker
        registry.finish_file(ctx, facts, Finishing(source, insert_imports, torch_npu_named))
    except UnsupportedScope as exc:
        if exc.compile_error:
            raise Unreadable(*refused_by_cpython(original, exc)) from exc
        raise  # scopes.py models every other scope: an internal error
    except BaseException:
        share(source, None)
        raise
    finally:
        # (the tree stays shared for the folding of the file's rows: migrate.py forgets it)
        if facts.scopes is not None:
            facts.scopes.release()
    return PassOutput(
        _edited(original, decoded, ctx),
        ctx.events,
        ctx.notices,
        ctx.line_inserts,
        ctx.insert_order,
        parse_check=ctx.unchecked_edits > 0 or decoded is not None,
        # the tree of the file's own bytes (target_scan reads offsets in them)
        tree=kept[0][1] if len(kept) == 1 and decoded is None else None,
        needs_torch_npu=ctx.needs_torch_npu,
        helper_lines=ctx.helper_lines,
        framework="tensorflow" if ctx.tf is not None else "",
    )
