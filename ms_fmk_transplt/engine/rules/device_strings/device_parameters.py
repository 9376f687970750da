"""Integer device indices handed to a function of the same file whose parameter that function
then uses as a device: ``move(batch, rank)`` -> ``def move(batch, device): ... v.to(device)``.
The function's calls are found in the file's text and parsed one at a time (no whole-file
tree: the span pass walks a file in pieces); calls in other files are not followed."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ms_fmk_transplt.engine.recorder import snippet_of
from ms_fmk_transplt.engine.rules.device_strings.device_names import INT_OPS
from ms_fmk_transplt.engine.scope_model import Scope, full_name
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.tables.table_sections import IntDeviceTable
from ms_fmk_transplt.tables.unsupported_table import Entry

MAX_CALL_LINES = 30  # a call spread over more lines is not read


@dataclass(frozen=True)
class Parameter:
    """A parameter of a function defined in the file, read as a device in its body."""

    function: str
    name: str
    position: int | None  # among the positional parameters (None: keyword-only)
    method: bool  # called as ``obj.f(...)``: the receiver fills the first position


@dataclass(frozen=True)
class IntArgument:
    call: str  # the call as written, on one line
    text: str  # the argument as written


SHOWN = 3  # calls named in a row
PASSED_INDEX = Entry(
    "device parameter",
    "dynamic_device",
    "caveat",
    "a call in this file passes an integer device index to this parameter, which is used as a "
    'device here: torch reads a bare int as a CUDA index. Pass f"npu:{i}" at the call, or '
    'build the device from the index here (torch.device("npu", i))',
)


class PassedIndices:
    """One row per parameter used as a device that a call of the file passes an integer device
    index (at its first use as a device), for the span concern of int devices."""

    def __init__(self, ctx: SpanContext) -> None:
        self.ctx = ctx
        self.done: dict[Parameter, list[IntArgument]] = {}

    def check(self, value: ast.expr, call: ast.Call) -> None:
        """``value``: an argument of ``call`` read as a device, not itself an index."""
        ctx = self.ctx
        if not isinstance(value, ast.Name) or ctx.is_claimed(value):
            return
        scope = ctx.scope_of(value)
        ctx.qname(value)  # (analyses the scopes it can see)
        parameter = parameter_of(value, scope)
        if parameter is None or parameter in self.done:
            return
        table = ctx.tables.int_device
        found = int_arguments(
            ctx.source.data, parameter, lambda node: written_int_index(node, table)
        )
        self.done[parameter] = found
        if not found:
            return
        calls = list(dict.fromkeys(a.call for a in found))
        shown = ", ".join(calls[:SHOWN]) + (
            f" and {len(calls) - SHOWN} more" if len(calls) > SHOWN else ""
        )
        indices = ", ".join(dict.fromkeys(a.text for a in found))
        api = f"{parameter.name} <- {shown}"
        message = (
            f"{parameter.name} receives an integer device index ({indices}) from {shown} and "
            f"is used as a device: {ctx.snippet(call)}"
        )
        ctx.unsupported(ctx.lines(value), api, PASSED_INDEX, message)


def parameter_of(name: ast.Name, scope: Scope) -> Parameter | None:
    """The parameter ``name`` reads, if its only binding in the function is that parameter
    (a parameter rebound in the body is not followed). The scope must be analysed."""
    bindings = scope.resolve(name.id)
    if len(bindings) != 1 or not isinstance(bindings[0].node, ast.arg):
        return None
    owner = bindings[0].scope
    function = owner.node
    if owner.kind != "function" or not isinstance(
        function, (ast.FunctionDef, ast.AsyncFunctionDef)
    ):
        return None
    args = function.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    if name.id not in positional and name.id not in [a.arg for a in args.kwonlyargs]:
        return None  # *args / **kwargs
    in_class = owner.parent.kind == "class"
    static = any(full_name(d) == "staticmethod" for d in function.decorator_list)
    position = positional.index(name.id) if name.id in positional else None
    return Parameter(function.name, name.id, position, in_class and not static)


def int_arguments(
    data: bytes, parameter: Parameter, is_index: Callable[[ast.expr], bool]
) -> list[IntArgument]:
    """The calls of the file that pass an integer device index (``is_index``) to
    ``parameter``, in source order."""
    found = []
    for start in _call_starts(data, parameter.function.encode(), parameter.method):
        line_start = data.rfind(b"\n", 0, start) + 1
        before = data[line_start:start]
        if b"#" in before or re.search(rb"\bdef\s*$", before):
            continue  # a comment, or the definition itself
        text = _text(data, start)
        call = _call_at(text)
        if call is None:
            continue
        value = _argument(call, parameter)
        if value is not None and is_index(value):
            code = snippet_of(ast.get_source_segment(text, call) or "")
            found.append(IntArgument(code, ast.get_source_segment(text, value) or ""))
    return found


def _call_starts(data: bytes, name: bytes, method: bool) -> Iterator[int]:
    """Where ``name(`` (``.name(`` for a method) starts in the file: bytes.find, not a regular
    expression over the whole file per parameter."""
    size = len(data)
    at = data.find(name)
    while at >= 0:
        end = at + len(name)
        after = end
        while after < size and data[after] in _BLANKS:
            after += 1
        if after < size and data[after] == _PAREN:
            if method:
                before = at - 1
                while before >= 0 and data[before] in _BLANKS:
                    before -= 1
                if before >= 0 and data[before] == _DOT:
                    yield at
            elif at == 0 or not (data[at - 1] in _WORD or data[at - 1] == _DOT):
                yield at
        at = data.find(name, end)


_BLANKS = frozenset(b" \t")
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_PAREN, _DOT = ord("("), ord(".")


def _text(data: bytes, start: int) -> str:
    """The text from ``start`` to the end of its line and the next ones (a call's lines)."""
    end = start
    for _ in range(MAX_CALL_LINES):
        end = data.find(b"\n", end + 1)
        if end < 0:
            end = len(data)
            break
    return data[start:end].decode("utf-8", "replace")


def _call_at(text: str) -> ast.Call | None:
    """The call that ``text`` starts with (``f(...)``), parsed alone, or None."""
    depth, end = 0, None
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.OP and token.string in "([{":
                depth += 1
            elif token.type == tokenize.OP and token.string in ")]}":
                depth -= 1
                if depth == 0:
                    end = token.end
                    break
    except (tokenize.TokenError, SyntaxError):
        return None
    if end is None:
        return None
    lines = text.splitlines(keepends=True)
    source = "".join(lines[: end[0] - 1]) + lines[end[0] - 1][: end[1]]
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError):
        return None
    return tree.body if isinstance(tree.body, ast.Call) else None


def _argument(call: ast.Call, parameter: Parameter) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == parameter.name:
            return keyword.value
    if parameter.position is None or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    position = parameter.position - (1 if parameter.method else 0)
    return call.args[position] if 0 <= position < len(call.args) else None


def written_int_index(node: ast.expr, table: IntDeviceTable) -> bool:
    """Whether an argument read as written (no name resolution: it lies outside the tree being
    walked) is an integer device index: an int literal, a name or attribute the table lists
    (``rank``, ``self.rank``), an element of a listed sequence, a listed call spelled in full
    (``int(...)``), and arithmetic on those."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.Name):
        return node.id in table.identifiers
    if isinstance(node, ast.Attribute):
        return node.attr in table.identifiers
    if isinstance(node, ast.Subscript):
        seq = node.value
        last = seq.id if isinstance(seq, ast.Name) else getattr(seq, "attr", None)
        return last in table.sequences
    if isinstance(node, ast.Call):
        return (full_name(node.func) or "") in table.calls
    if isinstance(node, ast.BinOp) and isinstance(node.op, INT_OPS):
        sides = (node.left, node.right)
        if any(_is_text(s) for s in sides):
            return False
        return any(written_int_index(s, table) for s in sides)
    return False


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
    )
