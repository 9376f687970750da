"""Where CUDA capability probes are (rule device_api.capability_probe, capability_spans.py):
the probe calls themselves, also through a variable (``props =
get_device_properties(d)`` with ``props.major``), the availability checks in front of them, also
as an early exit (``if not torch.cuda.is_available(): return``), and the classes that set up a
CUDA path behind one."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Optional

from ms_fmk_transplt.engine.spans.shared_tree import tree_of

QName = Callable[[ast.AST], Optional[str]]  # the pass's name resolution
# always a probe: which NVIDIA architecture / NCCL build is this?
PROBES = frozenset({"torch.cuda.get_device_capability", "torch.cuda.nccl.version"})
PROPERTIES = "torch.cuda.get_device_properties"  # a probe when asked for one of PROBE_FIELDS
PROBE_FIELDS = frozenset({"major", "minor", "multi_processor_count", "gcnArchName"})
AVAILABLE = "torch.cuda.is_available"


def checks_available(nodes: Iterable[ast.AST], qname: QName) -> bool:
    """Whether ``nodes`` call ``torch.cuda.is_available()``."""
    calls = [n for n in nodes if isinstance(n, ast.Call)]
    return any((qname(c.func) or "") == AVAILABLE for c in calls)


def probe_calls(
    nodes: Iterable[ast.AST], qname: QName, variables: frozenset[str] = frozenset()
) -> list[ast.Call]:
    """The probe calls among ``nodes`` (qname: the pass's name resolution):
    ``get_device_capability(...)`` and ``get_device_properties(...)`` read for an
    architecture field (``.major``; not ``.total_memory``, which the NPU has), also through a
    variable (``props = get_device_properties(d)`` with ``props.major`` in the file)."""
    found: list[ast.Call] = []
    for n in nodes:
        if isinstance(n, ast.Call) and (qname(n.func) or "") in PROBES:
            found.append(n)
        elif isinstance(n, ast.Attribute) and n.attr in PROBE_FIELDS:
            inner = n.value
            if isinstance(inner, ast.Call) and (qname(inner.func) or "") == PROPERTIES:
                found.append(inner)
        elif isinstance(n, ast.Assign) and variables and _assigned_names(n) & variables:
            value = n.value
            if isinstance(value, ast.Call) and (qname(value.func) or "") == PROPERTIES:
                found.append(value)
    return found


def _assigned_names(node: ast.Assign) -> set[str]:
    """The plain names an assignment binds."""
    return {target.id for target in node.targets if isinstance(target, ast.Name)}


_PROPERTIES_VARIABLE = re.compile(rb"(?m)^[ \t]*([A-Za-z_]\w*)\s*=\s*[\w.]*get_device_properties\(")


def probed_variables(source: bytes) -> frozenset[str]:
    """Names assigned ``get_device_properties(...)`` whose architecture fields the file reads
    (``props.major``): those calls are probes as much as ``get_device_properties(d).major``."""
    if b"get_device_properties" not in source:
        return frozenset()
    found: set[str] = set()
    for name in set(_PROPERTIES_VARIABLE.findall(source)):
        fields = (
            rb"\b"
            + re.escape(name)
            + rb"\.(?:"
            + rb"|".join(f.encode() for f in sorted(PROBE_FIELDS))
            + rb")\b"
        )
        if re.search(fields, source):
            found.add(name.decode())
    return frozenset(found)


def negates_available(nodes: Iterable[ast.AST], qname: QName) -> bool:
    """``not torch.cuda.is_available()`` among ``nodes``."""
    for n in nodes:
        if not isinstance(n, ast.UnaryOp) or not isinstance(n.op, ast.Not):
            continue
        operand = n.operand
        if isinstance(operand, ast.Call) and (qname(operand.func) or "") == AVAILABLE:
            return True
    return False


_PROBE_TEXT = re.compile(
    rb"get_device_capability|get_device_properties\([^\n]*\)\s*\.\s*(?:major|minor)"
    rb"|\.(?:major|minor|multi_processor_count|gcnArchName)\b"
)


def probe_class_lines(source: bytes) -> frozenset[int]:
    """Lines of the classes that set up a CUDA path behind a capability probe under an
    availability check (``if not torch.cuda.is_available(): return`` then ``props.major``):
    their ``x.is_cuda`` tests select that setup, which never happens on an NPU host."""
    if b"is_cuda" not in source or b"is_available" not in source or b"get_device_" not in source:
        return frozenset()
    try:
        tree = tree_of(source)
    except (SyntaxError, ValueError):
        return frozenset()
    lines = source.split(b"\n")
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.end_lineno:
            text = b"\n".join(lines[node.lineno - 1 : node.end_lineno])
            if b"is_available()" in text and _PROBE_TEXT.search(text):
                found.update(range(node.lineno, node.end_lineno + 1))
    return frozenset(found)


def exits_early(body: list[ast.AST]) -> bool:
    """``if not torch.cuda.is_available(): return``: a body (its nodes) that leaves the
    function, so the statements after the ``if`` are what it guards."""
    return any(isinstance(n, (ast.Return, ast.Raise)) for n in body)


# what a torch.cuda probe raises on a host without CUDA (AssertionError: "Torch not compiled
# with CUDA enabled"; RuntimeError: no driver or device) and the handlers that catch it
RAISED = frozenset({"AssertionError", "RuntimeError", "Exception", "BaseException"})
_TRIES = tuple({ast.Try, getattr(ast, "TryStar", ast.Try)})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _catches(node: ast.Try) -> bool:
    """A handler of ``node`` catches what a probe raises on an NPU host (also a bare one)."""
    for handler in node.handlers:
        if handler.type is None:
            return True
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        names = {k.id if isinstance(k, ast.Name) else getattr(k, "attr", "") for k in kinds}
        if names & RAISED:
            return True
    return False


def tried(stmt: ast.AST, ancestors: Sequence[ast.AST]) -> bool:
    """Whether ``stmt`` (enclosed by ``ancestors``, outermost first) runs in the body of a
    ``try`` of its own function whose ``except`` catches what a probe raises on an NPU host
    (``try: cap = get_device_capability() except (RuntimeError, AssertionError): ...``)."""
    inner = stmt
    for outer in reversed(ancestors):
        if isinstance(outer, _SCOPES):
            return False
        if isinstance(outer, _TRIES) and inner in outer.body and _catches(outer):
            return True
        inner = outer
    return False
