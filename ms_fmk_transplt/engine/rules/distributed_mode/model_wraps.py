"""Where the DistributedDataParallel wrap of each ``-t`` model goes (``distributed -m``, rule
distributed_mode.ddp), and which ``model.<attr>`` must then go through ``model.module``.

The wrap is inserted in the function (or module) that assigns the model and trains, after the
last statement that still initialises, loads or moves the model in place -- ``model.apply(init)``,
``model.load_state_dict(...)``, ``model.to(device)``, ``init_weights(model)``, in-place tensor
ops on its weights -- found between its last assignment and its first use (a loop, a forward
call, the model handed to another function). DDP broadcasts rank 0's weights when it wraps: an
initialisation after that would make each rank's replica different (their seeds differ).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Union

import libcst as cst

from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.tables.table_sections import DistributedModeTable

Scope = Union[cst.Module, cst.FunctionDef]  # (not `|`: Python 3.9)


def assigned_names(stmt: cst.CSTNode) -> set[str]:
    """Names assigned anywhere in a statement (not inside nested functions or classes)."""
    names: set[str] = set()

    class Collect(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            names.update(_target_names(node.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            names.update(_target_names(node.target))

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

    stmt.visit(Collect())
    return names


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _target_names(e.value)]
    return []


def body_of(scope: Scope) -> Sequence[cst.BaseStatement]:
    if isinstance(scope, cst.Module):
        return scope.body
    body = scope.body
    return body.body if isinstance(body, cst.IndentedBlock) else ()


def calls_in(node: cst.CSTNode) -> list[cst.Call]:
    """The calls of a statement (not inside nested functions)."""
    calls: list[cst.Call] = []

    class Collect(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            calls.append(n)

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

    node.visit(Collect())
    return calls


def _root(node: cst.BaseExpression) -> str | None:
    """The name an attribute chain starts from (``model`` for ``model[2].fc.weight``)."""
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


@dataclass
class Wrap:
    """The DDP wrap of one ``-t`` model."""

    target: str
    scope: Scope
    anchor: int  # the input line it is inserted before
    access: set[int] = field(default_factory=set)  # ids of `target.<attr>` to reach via .module


class ModelWraps:
    """Plans the wrap of each ``-t`` model of one file."""

    def __init__(
        self,
        ctx: MigrationContext,
        table: DistributedModeTable,
        scopes: list[Scope],
        trains: Callable[[Scope, Sequence[cst.BaseStatement]], bool],
    ) -> None:
        self.ctx, self.table, self.scopes, self.trains = ctx, table, scopes, trains

    def plan(self, target: str) -> Wrap | None:
        """None when no statement of the file assigns ``target``."""
        candidates = []
        for scope in self.scopes:
            body = list(body_of(scope))
            hits = [
                i
                for i, stmt in enumerate(body)
                if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef))
                and target in assigned_names(stmt)
            ]
            if hits:
                candidates.append((not self.trains(scope, body), scope, body, hits[-1]))
        if not candidates:
            return None
        candidates.sort(key=lambda c: c[0])  # a scope that trains first (stable)
        _, scope, body, last = candidates[0]
        after = self._wrap_index(body, last, target)
        wrap = Wrap(target, scope, self.ctx.lines(body[after])[1] + 1)
        self._plan_module_access(wrap, body, after)
        return wrap

    def _wrap_index(self, body: list[cst.BaseStatement], last: int, target: str) -> int:
        """The statement the wrap follows: the last one initialising the model in place
        before its first use (else its last assignment)."""
        index = last
        for i in range(last + 1, len(body)):
            stmt = body[i]
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            if isinstance(stmt, (cst.For, cst.While)) or self._uses(stmt, target):
                break
            if any(self._initialises(call, target) for call in calls_in(stmt)):
                index = i
        return index

    def _uses(self, stmt: cst.CSTNode, target: str) -> bool:
        """A forward call of the model, or the model handed to a function that is neither
        ``print`` nor an initialisation."""
        for call in calls_in(stmt):
            if isinstance(call.func, cst.Name) and call.func.value == target:
                return True
            given = any(
                isinstance(a.value, cst.Name) and a.value.value == target for a in call.args
            )
            name = self.ctx.qname(call.func) or ""
            if given and name not in self.table.print_calls:
                if not self._initialises(call, target):
                    return True
        return False

    def _initialises(self, call: cst.Call, target: str) -> bool:
        """``target.apply(...)``, ``target.fc.weight.normal_()``, ``init_weights(target)``,
        ``nn.init.zeros_(target.bias)``: the call (re)initialises, loads or moves the model."""
        func = call.func
        name = func.attr.value if isinstance(func, cst.Attribute) else None
        if name is None:
            name = func.value if isinstance(func, cst.Name) else ""
        lowered = name.lower()
        initialising = (
            name in self.table.wrap_after_methods
            or any(word in lowered for word in self.table.wrap_after_words)
            or name.endswith("_")
        )
        if not initialising:
            return False
        if isinstance(func, cst.Attribute) and _root(func.value) == target:
            return True
        return any(_root(a.value) == target for a in call.args)

    def _plan_module_access(self, wrap: Wrap, body: list[cst.BaseStatement], after: int) -> None:
        """``target.<attr>`` DDP does not forward, after the wrap and in functions that take the
        model (or use the module-level one)."""
        target, access, forwards = wrap.target, wrap.access, self.table.ddp_forwards

        class Collect(cst.CSTVisitor):
            def visit_Attribute(self, n: cst.Attribute) -> None:
                if (
                    isinstance(n.value, cst.Name)
                    and n.value.value == target
                    and n.attr.value not in forwards
                ):
                    access.add(id(n))

            def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
                return False

        for stmt in body[after + 1 :]:
            if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                stmt.visit(Collect())
        for other in self.scopes[1:]:
            if other is wrap.scope:
                continue
            assert isinstance(other, cst.FunctionDef)  # scopes[0] is the module, then functions
            params = {p.name.value for p in other.params.params}
            local = any(target in assigned_names(stmt) for stmt in body_of(other))
            uses_global = isinstance(wrap.scope, cst.Module) and not local and target not in params
            if target in params or uses_global:
                for stmt in body_of(other):
                    stmt.visit(Collect())
