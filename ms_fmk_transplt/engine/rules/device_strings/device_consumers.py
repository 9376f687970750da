"""Devices given to libraries that are not torch (rule device_strings.non_torch_consumer, declared
here): faster-whisper's ``WhisperModel(device="cuda")``, CTranslate2, onnxruntime's
``providers=["CUDAExecutionProvider"]``, mergekit's ``MergeOptions(cuda=...)``, as
rules/device_consumers.json lists them (tables/device_consumer_table.py).

Such a library takes its own device names ("cpu", "cuda", "auto"): the ``"cuda"`` it is given is
left as written (``"npu"`` would be rejected) and a ``torch.cuda`` test computing the value stays
on torch.cuda (False on an NPU host: the library gets its CPU arm); each call gets a row saying
what to do on Ascend. One level of flow within a file: a literal passed directly, or a name the
same scope assigns (``device = "cuda"`` ... ``WhisperModel(m, device=device)``), kept only when
every read of that name in the scope is such an argument (a name that also serves torch is
migrated, and the row says the library then receives ``"npu"``). Calls are recognised by what
the file imports (``from faster_whisper import WhisperModel``, ``import onnxruntime as ort``).
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.spans.shared_tree import tree_of
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.engine.tree_nodes import import_bindings, tree_nodes
from ms_fmk_transplt.tables.device_consumer_table import Consumer, DeviceConsumerTable
from ms_fmk_transplt.tables.unsupported_table import Entry

NON_TORCH_CONSUMER = declare(
    "device_strings.non_torch_consumer",
    'a device given to a library that is not torch (`WhisperModel(device="cuda")`, '
    '`providers=["CUDAExecutionProvider"]`, `MergeOptions(cuda=...)`): left as written, one row',
    "Some libraries take a device of their own, not a torch device: faster-whisper and "
    'CTranslate2 accept "cpu", "cuda" or "auto" (`"npu"` would be rejected, and they have no NPU '
    "backend), onnxruntime picks its execution providers (`CANNExecutionProvider` runs on "
    'Ascend), mergekit\'s `MergeOptions(cuda=True)` computes on `"cuda"`. The calls are listed '
    "in rules/device_consumers.json with what each accepts, what to do on Ascend and the public "
    "source the facts were read at. Their device argument is left as written -- a literal, or a "
    "name the same scope assigns a literal and reads nowhere else -- and a `torch.cuda` test "
    "computing it stays on torch.cuda (False on an NPU host, so the library takes its CPU arm: "
    '`device="cuda" if torch.cuda.is_available() else "cpu"`, `cuda=torch.cuda.is_available()`). '
    "Each call gets a row: manual for a CUDA value written in the code, a caveat for a value "
    "computed at run time. A name that also serves torch is migrated with it; its row says the "
    'library then receives `"npu"`.',
    kind=OPEN_WORK,
)

Key = tuple[int, int]  # (line, column) of a node
CallKey = tuple[int, int, int, int]  # a call's start and end: f(x)(y) starts where f(x) does
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_OFF = (False, None, 0)  # a switch given one of these selects no CUDA


@dataclass(frozen=True)
class Use:
    """A consumer call's device argument, as its row reports it."""

    consumer: Consumer
    call: str  # the qualified name as imported
    lines: tuple[int, int]  # of the argument
    shown: str  # the call's argument as the message shows it
    action: str  # manual / caveat
    note: str  # why, for the message


@dataclass(frozen=True)
class ConsumerFlows:
    kept: frozenset[Key] = frozenset()  # "cuda" literals left as written
    held: frozenset[Key] = frozenset()  # values whose torch.cuda stays on torch.cuda
    calls: dict[CallKey, list[Use]] = field(default_factory=dict)


NONE = ConsumerFlows()


def key(node: ast.AST) -> Key:
    return node.lineno, node.col_offset  # type: ignore[attr-defined]


def call_key(node: ast.Call) -> CallKey:
    return node.lineno, node.col_offset, node.end_lineno or 0, node.end_col_offset or 0


@lru_cache(maxsize=8)
def consumer_flows(source: bytes, table: DeviceConsumerTable) -> ConsumerFlows:
    """What the file gives the consumer calls of ``table`` (nothing unless it names one)."""
    if not table.named_in(source):
        return NONE
    try:
        tree = tree_of(source)
    except (SyntaxError, ValueError):
        return NONE
    imports = import_paths(tree)
    kept: set[Key] = set()
    held: set[Key] = set()
    calls: dict[CallKey, list[Use]] = {}
    for nodes in _scopes(tree):
        _scope_flows(nodes, imports, table, (kept, held, calls))
    return ConsumerFlows(frozenset(kept), frozenset(held), calls) if calls else NONE


def import_paths(tree: ast.Module) -> dict[str, str]:
    """Names the file's imports bind (anywhere in it) -> the dotted path each binds."""
    return import_bindings(tree_nodes(tree))  # (the list the whole-file helpers share)


def dotted_path(node: ast.AST, imports: dict[str, str]) -> str | None:
    """The imported path a dotted expression names (``ort.InferenceSession`` ->
    ``onnxruntime.InferenceSession``); None when its first name is not imported."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    root = imports.get(node.id) if isinstance(node, ast.Name) else None
    return ".".join([root, *reversed(parts)]) if root else None


def _scopes(tree: ast.Module) -> list[list[ast.AST]]:
    """The nodes of each scope (the module, each function, lambda and class body)."""
    out: list[list[ast.AST]] = []
    roots: list[ast.AST] = [tree]
    while roots:
        nodes: list[ast.AST] = []
        todo = list(ast.iter_child_nodes(roots.pop()))
        while todo:
            node = todo.pop()
            if isinstance(node, _SCOPES):
                roots.append(node)
                continue
            nodes.append(node)
            todo.extend(ast.iter_child_nodes(node))
        out.append(nodes)
    return out


Found = tuple[set[Key], set[Key], dict[CallKey, list[Use]]]


def _scope_flows(
    nodes: list[ast.AST], imports: dict[str, str], table: DeviceConsumerTable, found: Found
) -> None:
    assigned: dict[str, list[ast.expr]] = {}
    reads: Counter[str] = Counter()
    consumer_calls: list[tuple[ast.Call, str, Consumer, ast.expr]] = []
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            if isinstance(node.target, ast.Name):
                assigned.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            reads[node.id] += 1
        elif isinstance(node, ast.Call) and (
            _leaf(node.func) in table.leaves or _leaf(node.func) in imports
        ):
            path = dotted_path(node.func, imports) or ""
            consumer = table.by_call.get(path)
            value = argument(node, consumer) if consumer is not None else None
            if consumer is not None and value is not None:
                consumer_calls.append((node, path, consumer, value))
    given = Counter(v.id for _, _, _, v in consumer_calls if isinstance(v, ast.Name))
    kept, held, calls = found
    for call, path, consumer, value in consumer_calls:
        sources = [value]
        only_here = True
        if isinstance(value, ast.Name):
            sources = assigned.get(value.id, [])
            only_here = reads[value.id] == given[value.id]
        use = _use(consumer, path, value, sources, only_here)
        if use is None:
            continue
        calls.setdefault(call_key(call), []).append(use)
        if only_here:
            held.update(key(s) for s in sources)
            kept.update(key(lit) for s in sources for lit in read_value(s, consumer)[0])


def _leaf(func: ast.AST) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def argument(call: ast.Call, consumer: Consumer) -> ast.expr | None:
    """The value a call gives the consumer's parameter (by keyword, or at its position)."""
    for kw in call.keywords:
        if kw.arg == consumer.argument:
            return kw.value
    at = consumer.position
    if at is None or len(call.args) <= at:
        return None
    if any(isinstance(a, ast.Starred) for a in call.args[: at + 1]):
        return None
    return call.args[at]


def read_value(expr: ast.expr, consumer: Consumer) -> tuple[list[ast.Constant], bool]:
    """The literals of a value that select CUDA, and whether the value is written out (a
    literal, a list of literals) rather than computed at run time."""
    if consumer.flag:
        written = isinstance(expr, ast.Constant)
        return [], written
    if isinstance(expr, ast.Constant):
        text = expr.value
        return ([expr] if isinstance(text, str) and consumer.selects_cuda(text) else []), True
    if isinstance(expr, (ast.List, ast.Tuple)):  # providers=["CUDAExecutionProvider", ...]
        items = [e.elts[0] if isinstance(e, ast.Tuple) and e.elts else e for e in expr.elts]
        found = [lit for item in items for lit in read_value(item, consumer)[0]]
        return found, all(isinstance(item, ast.Constant) for item in items)
    if isinstance(expr, ast.IfExp):
        return read_value(expr.body, consumer)[0] + read_value(expr.orelse, consumer)[0], False
    return [], False


def _use(
    consumer: Consumer, path: str, value: ast.expr, sources: list[ast.expr], only_here: bool
) -> Use | None:
    """The row of one call (None: it selects no CUDA, e.g. ``device="cpu"``, ``cuda=False``)."""
    read = [read_value(s, consumer) for s in sources]
    written = bool(read) and all(w for _, w in read)
    if consumer.flag:
        some = any(not (isinstance(s, ast.Constant) and s.value in _OFF) for s in sources)
    else:
        some = any(found for found, _ in read)
    if written and not some:
        return None
    shown = _shown(path, consumer.argument, value, sources)
    lines = (value.lineno, value.end_lineno or value.lineno)
    if not only_here and some:
        note = f"it also serves torch here and is migrated with it: {consumer.library} then "
        note += "receives npu, which it does not accept" if not consumer.flag else "selects CUDA"
    elif written:
        note = f"{consumer.library} takes its own device, not a torch device: left as written"
    else:
        leaf = path.rsplit(".", 1)[-1]
        note = f"computed at run time; {leaf} accepts {consumer.accepts}"
        if any(isinstance(n, ast.Attribute) and n.attr == "cuda" for n in _nodes(sources)):
            note += " (its torch.cuda test stays: False on the NPU host)"
        return Use(consumer, path, lines, shown, "caveat", note)
    return Use(consumer, path, lines, shown, consumer.action, note)


def _nodes(roots: list[ast.expr]) -> list[ast.AST]:
    return [n for root in roots for n in ast.walk(root)]


def _shown(path: str, argument: str, value: ast.expr, sources: list[ast.expr]) -> str:
    """The call's argument as written (``WhisperModel(device='cuda')``), and where a name given
    to it is assigned (``Translator(device=device), device = 'cuda' on line 14``)."""
    text = _short(ast.unparse(value))
    shown = f"{path.rsplit('.', 1)[-1]}({argument}={text})"
    if isinstance(value, ast.Name) and len(sources) == 1:
        source = sources[0]
        shown += f", {text} = {_short(ast.unparse(source))} on line {source.lineno}"
    return shown


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def hold(ctx: SpanContext, value: ast.AST) -> None:
    """A value given to a consumer keeps its ``torch.cuda`` tests (``cuda=torch.cuda.
    is_available()``): claimed, the device_api rules leave them; False on an NPU host."""
    for node in ast.walk(value):
        if isinstance(node, ast.Attribute) and node.attr == "cuda":
            ctx.claim(node)


def report(ctx: SpanContext, call: ast.Call, uses: list[Use], held: frozenset[Key]) -> None:
    """The rows of a consumer call, which is claimed (its device is no torch device for the
    unsupported rules either); the torch.cuda tests of the values it is given directly are
    held."""
    ctx.claim(call)
    for value in (*call.args, *(kw.value for kw in call.keywords)):
        if key(value) in held:
            hold(ctx, value)
    for use in uses:
        consumer = use.consumer
        api = f"{use.call}({consumer.argument}=)"
        entry = Entry(api, "cuda_only_api", use.action, consumer.ascend)
        ctx.unsupported(use.lines, api, entry, f"{use.shown}: {use.note}", NON_TORCH_CONSUMER)
