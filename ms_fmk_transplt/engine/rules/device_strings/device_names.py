"""Names that hold a device NAME (a string such as ``"cuda:0"``), not an integer index (part of
rule device_strings.int_device).

device_strings.int_device recognises integer device indices by name (``local_rank``,
``device_id``, ``args.gpu``, ...) and makes them explicit: ``x.to(device_id)`` becomes
``x.to(f"npu:{device_id}")``. A name of that list can hold a whole device name instead:
``local_device = get_accelerator().device_name(rank)``, ``def f(x, device_id: str)``,
``gpu = "cuda:0"``, ``args.device_id`` from ``add_argument("--device_id", default="cuda:0")``;
made explicit, it would read ``"npu:npu:0"`` at run time. Where the file binds such a name to a
string that names a device (a string with letters in it: a digit string such as
``os.environ["LOCAL_RANK"]`` or ``"0"`` is an index, ``f"npu:{...}"`` reads it right), this module
says so, by the position of the binding, and the rule leaves its reads alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import lru_cache

from ms_fmk_transplt.engine.spans.shared_tree import tree_of

Key = tuple[int, int]  # (line, column) of a binding node: a Store Name, a parameter
NAME, INDEX = "name", "index"  # what a binding holds (absent: the file cannot tell)
DIGITS = "digits"  # a string of digits ("0", os.environ["LOCAL_RANK"]): an index for a listed name
# calls that return a device name: deepspeed's get_accelerator().device_name(i), torch.device
NAME_CALLS = frozenset({"device_name", "device"})
INDEX_CALLS = frozenset({"device_count", "current_device"})  # of torch.cuda: an index
INT_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)  # int arithmetic keeps an index


def is_integer(node: ast.AST) -> bool:
    """An int literal (``True`` is a name here, not a number)."""
    return isinstance(node, ast.Constant) and type(node.value) is int


def _text_names_device(text: str) -> bool:
    """A string names a device unless it is an index written as digits (``"0"``, ``"0,1"``)."""
    return any(ch.isalpha() for ch in text)


def _annotation_kind(annotation: ast.expr | None) -> str | None:
    """``str`` / ``Optional[str]`` / ``str | None``: NAME; ``int`` (also optional): INDEX."""
    if annotation is None:
        return None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    names = {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)}
    names.discard("Optional")
    names.discard("None")
    if names == {"str"}:
        return NAME
    return INDEX if names == {"int"} else None


class _Reader:
    """What values hold, knowing the module's constants (``MSFT_NPU_DEVICE`` of ``-s``)."""

    def __init__(self, tree: ast.Module) -> None:
        self.constants: dict[str, str] = {}
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                kind = self.value_kind(stmt.value)
                if isinstance(target, ast.Name) and kind is not None:
                    self.constants[target.id] = kind

    def value_kind(self, value: ast.expr | None) -> str | None:
        """What an assigned value holds: a device NAME, an INDEX, or None (cannot tell)."""
        if value is None:
            return None
        if isinstance(value, ast.Name):  # a module constant: MSFT_NPU_DEVICE = "npu:" + ... (-s)
            return self.constants.get(value.id)
        if isinstance(value, ast.Constant):
            if isinstance(value.value, str):
                if _text_names_device(value.value):
                    return NAME
                return DIGITS if value.value.isdigit() else None  # "" / "0,1": cannot tell
            return INDEX if type(value.value) is int else None
        if isinstance(value, ast.JoinedStr):
            texts = [v.value for v in value.values if isinstance(v, ast.Constant)]
            return (
                NAME if any(isinstance(t, str) and _text_names_device(t) for t in texts) else None
            )
        if isinstance(value, ast.IfExp):
            kinds = {self.value_kind(value.body), self.value_kind(value.orelse)}
            return kinds.pop() if len(kinds) == 1 else None
        if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Add, ast.Sub, ast.Mod)):
            sides = {self.value_kind(value.left), self.value_kind(value.right)}
            if NAME in sides:
                return NAME if isinstance(value.op, ast.Add) else None
            return INDEX if sides == {INDEX} else None  # torch.cuda.device_count() - 1
        if isinstance(value, ast.Call):
            return self._call_kind(value)
        return None

    def _call_kind(self, call: ast.Call) -> str | None:
        func = call.func
        if isinstance(func, ast.Name) and func.id == "int":
            return INDEX
        if isinstance(func, ast.Attribute) and func.attr in INDEX_CALLS:
            owner = func.value  # torch.cuda.device_count(), torch.cuda.current_device()
            if isinstance(owner, ast.Attribute) and owner.attr == "cuda":
                return INDEX
        if isinstance(func, ast.Name) and func.id == "str" and len(call.args) == 1:
            # str(torch.device(...)) names a device; str(rank) is an index written as digits
            inner = self.value_kind(call.args[0])
            return NAME if inner == NAME else None
        if isinstance(func, ast.Attribute) and func.attr in NAME_CALLS:
            if func.attr == "device_name" or (
                isinstance(func.value, ast.Name) and func.value.id == "torch"
            ):
                return NAME
        if isinstance(func, ast.Attribute) and func.attr == "format":
            return self.value_kind(func.value)
        return None

    def parameter_kinds(self, args: ast.arguments) -> dict[Key, str]:
        params = [*args.posonlyargs, *args.args]
        defaults: list[ast.expr | None] = [None] * (len(params) - len(args.defaults))
        pairs = [*zip(params, [*defaults, *args.defaults]), *zip(args.kwonlyargs, args.kw_defaults)]
        found: dict[Key, str] = {}
        for param, default in pairs:
            kind = self.value_kind(default) if default is not None else None
            if kind not in (INDEX, DIGITS):  # `device_id: str = "0"` holds an index
                kind = _annotation_kind(param.annotation) or kind
            if kind is not None:
                found[(param.lineno, param.col_offset)] = kind
        return found

    def assignment_kinds(self, node: ast.Assign | ast.AnnAssign) -> dict[Key, str]:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        kind = self.value_kind(node.value)
        if isinstance(node, ast.AnnAssign) and kind not in (INDEX, DIGITS):
            kind = _annotation_kind(node.annotation) or kind
        if kind is None:
            return {}
        return {(t.lineno, t.col_offset): kind for t in targets if isinstance(t, ast.Name)}

    def option_kind(self, call: ast.Call) -> tuple[str, str] | None:
        """``parser.add_argument("--device_id", default="cuda:0")``: (its dest, what it holds)."""
        flags = [a.value for a in call.args if isinstance(a, ast.Constant)]
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        dest = keywords.get("dest")
        name = dest.value if isinstance(dest, ast.Constant) else None
        if name is None:
            texts = [f for f in flags if isinstance(f, str)]
            longs = [f for f in texts if f.startswith("--")]
            name = (longs or texts)[0] if texts else None
        if not isinstance(name, str):
            return None
        kind = self.value_kind(keywords.get("default"))
        kind = INDEX if kind == DIGITS else kind
        given = keywords.get("type")
        if isinstance(given, ast.Name) and given.id == "int":
            kind = INDEX
        return (name.lstrip("-").replace("-", "_"), kind) if kind else None


@lru_cache(maxsize=8)
def _kinds(source: bytes) -> tuple[dict[Key, str], dict[str, str]]:
    """What each binding of the file holds, by position, and each argparse option by dest."""
    try:
        tree = tree_of(source)
    except (SyntaxError, ValueError):
        return {}, {}
    reader = _Reader(tree)
    bindings: dict[Key, str] = {}
    options: dict[str, str] = {}
    for node in _statements(tree.body):  # statements only: a tenth of the nodes
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            bindings.update(reader.assignment_kinds(node))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bindings.update(reader.parameter_kinds(node.args))
        call = node.value if isinstance(node, (ast.Expr, ast.Assign)) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
            option = reader.option_kind(call) if call.func.attr == "add_argument" else None
            if option is not None:  # an option defined twice: an index if either says so
                dest, kind = option
                options[dest] = INDEX if INDEX in (options.get(dest), kind) else kind
    return bindings, options


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a body, those of nested blocks (functions, classes, if, for, try,
    with, match) too."""
    for stmt in body:
        yield stmt
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                yield from _statements(inner)
        for handler in getattr(stmt, "handlers", ()):
            yield from _statements(handler.body)
        for case in getattr(stmt, "cases", ()):
            yield from _statements(case.body)


def holds_device_name(source: bytes, binding_nodes: list[ast.AST]) -> bool:
    """Whether the bindings a read of a name sees hold a device name: one of them binds a
    string naming a device and none an index (an ``int(...)``, an ``int`` parameter, ...)."""
    held = _held(source, binding_nodes)
    return NAME in held and INDEX not in held and DIGITS not in held


def _held(source: bytes, binding_nodes: list[ast.AST]) -> set[str | None]:
    """What each binding holds (None: the file cannot tell)."""
    kinds = _kinds(source)[0]
    return {
        kinds.get((n.lineno, n.col_offset))
        for n in binding_nodes
        if isinstance(n, (ast.Name, ast.arg))
    }


def option_holds_device_name(source: bytes, dest: str) -> bool:
    """Whether the argparse option of the file with this dest holds a device name (its default
    is a string naming a device and its type is not ``int``)."""
    if b"add_argument" not in source:
        return False
    return _kinds(source)[1].get(dest) == NAME


@lru_cache(maxsize=8)
def may_hold_index(source: bytes) -> bool:
    """Cheap test: could a name of no list hold an index here (the calls that make one)?"""
    return b"device_count" in source or b"current_device" in source


def holds_device_index(source: bytes, binding_nodes: list[ast.AST]) -> bool:
    """Whether the bindings a read of a name sees hold an integer device index and nothing
    else (``dev = torch.cuda.device_count() - 1``): a name of no list, but an index all the same
    (not a string of digits: ``device=""`` or ``"0"`` of an unlisted name proves nothing)."""
    return _held(source, binding_nodes) == {INDEX}
