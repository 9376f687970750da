"""The single walk of the span pass: each unit's nodes in source order (``children``: not
always ``ast``'s field order), dispatching to every concern's
``visit_<Node>`` on the way down and ``leave_<Node>`` on the way up, in registry order.

String literals are dispatched by token: a ``SimpleString`` per literal token (an implicit
concatenation is several), a ``FormattedString`` per f-string token (the node kinds of LibCST's
tree, which the rules were first written against).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Optional, Union

from ms_fmk_transplt.engine.rules.family_exports import left_as_written
from ms_fmk_transplt.engine.scope_model import COMPREHENSIONS, FUNCTIONS, Scope, UnsupportedScope
from ms_fmk_transplt.engine.spans.anchors import anchor_pattern
from ms_fmk_transplt.engine.spans.decline import Decline
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import (
    STRING_VALUES,
    SpanContext,
    StringPart,
)
from ms_fmk_transplt.engine.spans.units import HeaderNode, Unit, header_nodes

# a concern's visit_<Node>/leave_<Node>: SimpleString hooks get a StringPart, others the node
_Hook = Callable[[Union[ast.AST, StringPart]], object]
# how a node type is walked (_how), its visit and leave hooks, and the fields holding its
# children (see _plan)
_Plan = tuple[int, list[_Hook], list[_Hook], Optional[tuple[str, ...]]]

_SKIP = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
# fields that never hold a child the walk visits: an operator or a context (the types of
# _SKIP), a name, a flag, a number (a field holding a string or a number is skipped anyway:
# not listing them spares a look at each node's value)
_NOT_CHILDREN = frozenset(
    ("ctx", "op", "ops", "id", "attr", "arg", "asname", "module", "level", "type_comment")
    + ("kind", "conversion", "is_async", "simple", "tag")
)
_NODE, _CONSTANT, _FSTRING, _IMPORT, _EXPR, _CALL = range(6)


def _how(kind: type[ast.AST]) -> int:
    """How ``walk`` treats a node of this type."""
    if issubclass(kind, ast.Constant):
        return _CONSTANT  # a literal: a string's tokens are dispatched (_strings)
    if issubclass(kind, ast.JoinedStr):
        return _FSTRING
    if kind is ast.Import or kind is ast.ImportFrom:
        return _IMPORT
    if issubclass(kind, ast.Expr):
        return _EXPR  # a bare expression: a string there is a docstring
    return _CALL if kind is ast.Call else _NODE


def _position(node: ast.expr | ast.keyword) -> tuple[int, int]:
    return node.lineno, node.col_offset


# nodes whose children are visited in another order than ast's fields (call arguments in
# source order, a dict's key before its value, ...), or in other scopes
_ORDERED = frozenset(
    (ast.Call, ast.Dict, ast.IfExp, ast.Lambda, *COMPREHENSIONS, *FUNCTIONS, ast.ClassDef)
)


# PEP 695 (Python 3.12): type parameters and `type` aliases, whose annotation scope engine/scopes.py
# does not model
_TYPE_PARAMS = sys.version_info >= (3, 12)


def _generic(unit: Unit) -> bool:
    """Whether the unit is, or is inside, a statement with type parameters or a type alias."""
    return any(
        getattr(node, "type_params", None) or type(node).__name__ == "TypeAlias"
        for node in (unit.node, *unit.ancestors)
    )


_HOOKS: dict[type[SpanConcern], tuple[list[str], list[str]]] = {}


def _hook_names(concern_cls: type[SpanConcern]) -> tuple[list[str], list[str]]:
    """The names of a concern class's visit_<Node> and leave_<Node> hooks, in dir() order
    (asked once per class: dir() of each concern of each file cost 0.1 s over a zoo)."""
    found = _HOOKS.get(concern_cls)
    if found is None:
        names = dir(concern_cls)
        visits = [a for a in names if a.startswith("visit_")]
        found = _HOOKS[concern_cls] = (visits, [a for a in names if a.startswith("leave_")])
    return found


class Walker:
    def __init__(
        self,
        ctx: SpanContext,
        concerns: Sequence[type[SpanConcern]],
        extra_words: tuple[str, ...] = (),
    ) -> None:
        self.ctx = ctx
        self.visits: dict[str, list[_Hook]] = defaultdict(list)
        self.leaves: dict[str, list[_Hook]] = defaultdict(list)
        for concern_cls in concerns:
            concern = concern_cls(ctx)
            visits, leaves = _hook_names(concern_cls)
            for attr in visits:
                self.visits[attr[6:]].append(getattr(concern, attr))
            for attr in leaves:
                self.leaves[attr[6:]].append(getattr(concern, attr))
        self._plans: dict[type[ast.AST], _Plan] = {}
        self.anchors = anchor_pattern(ctx.tables, extra_words)
        self.fstring_device = ctx.tables.device_strings.old
        self._alone: list[ast.JoinedStr] = []  # see _fstring_alone

    # -- units --------------------------------------------------------------------------------
    def walk_unit(self, unit: Unit) -> None:
        """Walks one unit; one holding code the pass does not model is left as written."""
        mark = self.ctx.unit_savepoint()
        try:
            if _TYPE_PARAMS and _generic(unit):
                raise Decline("PEP 695 type parameters or a type alias (their scope)")
            self._walk_unit(unit)
        except (Decline, UnsupportedScope) as exc:
            if isinstance(exc, UnsupportedScope) and exc.compile_error:
                raise  # (CPython refuses the file: found before any statement is walked)
            self.ctx.unit_rollback(mark)
            left_as_written(self.ctx, unit, str(exc))

    def _walk_unit(self, unit: Unit) -> None:
        ctx = self.ctx
        ctx.unit = unit
        ctx.start_unit()
        scope = self._scope_of(unit.ancestors)
        ctx.scope = ctx.unit_scope = scope
        node = unit.node
        if not unit.header:
            self.walk(node, scope)
            return
        ctx.enter(node, scope)
        for part in header_nodes(node):
            for child, child_scope in self._header_children(node, part, scope):
                self.walk(child, child_scope)
        ctx.leave()

    def _scope_of(self, ancestors: tuple[ast.AST, ...]) -> Scope:
        scopes = self.ctx.scopes
        scope = scopes.global_scope
        for node in ancestors:
            if isinstance(node, (*FUNCTIONS, ast.ClassDef)):
                scope = scopes.scope_of(node, scope)
        return scope

    def _header_children(
        self, node: ast.AST, part: HeaderNode, scope: Scope
    ) -> Iterator[tuple[ast.AST, Scope]]:
        if isinstance(part, ast.arguments):
            yield from self._arguments(part, scope)
        elif isinstance(part, ast.withitem):
            yield part.context_expr, scope
            if part.optional_vars is not None:
                yield part.optional_vars, scope
        elif isinstance(part, ast.keyword):
            yield part, scope
        else:
            yield part, scope

    # -- the walk -----------------------------------------------------------------------------
    def walk(self, node: ast.AST, scope: Scope) -> None:
        kind = type(node)
        plan = self._plans.get(kind)
        if plan is None:
            plan = self._plan(kind)
        how, visits, leaves, fields = plan
        if how == _CONSTANT:
            if isinstance(node.value, STRING_VALUES):  # type: ignore[attr-defined]
                self._strings(node)  # type: ignore[arg-type]
            return
        ctx = self.ctx
        ctx.stack.append(node)
        ctx.stack_scopes.append(scope)
        ctx.scope = scope
        if how == _FSTRING:
            self._fstring(node, scope)  # type: ignore[arg-type]
        elif how == _IMPORT:
            ctx.import_depth += 1
            for fn in visits:
                fn(node)
            for fn in leaves:
                fn(node)
            ctx.import_depth -= 1
        else:
            if how == _EXPR and isinstance(node.value, (ast.Constant, ast.JoinedStr)):  # type: ignore[attr-defined]
                ctx.docstrings.add(id(node.value))  # type: ignore[attr-defined]
            for fn in visits:
                fn(node)
            if how == _CALL:  # (children() for a call, without the generator)
                self.walk(node.func, scope)  # type: ignore[attr-defined]
                args, keywords = node.args, node.keywords  # type: ignore[attr-defined]
                if args and keywords:
                    items: list[ast.expr | ast.keyword] = [*args, *keywords]
                    items.sort(key=_position)
                    for item in items:
                        self.walk(item, scope)
                else:
                    for item in args or keywords:
                        self.walk(item, scope)
            elif fields is None:
                for child, child_scope in self.children(node, scope):
                    self.walk(child, child_scope)
            else:  # fields in source order (none that only holds a name, an operator, a flag)
                for field in fields:
                    value = getattr(node, field)
                    if type(value) is list:
                        for item in value:
                            if isinstance(item, ast.AST):
                                self.walk(item, scope)
                    elif isinstance(value, ast.AST):
                        self.walk(value, scope)
            for fn in leaves:
                fn(node)
        ctx.stack.pop()
        ctx.stack_scopes.pop()
        ctx.scope = ctx.stack_scopes[-1] if ctx.stack_scopes else ctx.unit_scope

    def _plan(self, kind: type[ast.AST]) -> _Plan:
        """How a node type is walked (see _how), its hooks, and the fields holding its
        children (None: see ``children``)."""
        name = kind.__name__
        fields = (
            None if kind in _ORDERED else tuple(f for f in kind._fields if f not in _NOT_CHILDREN)
        )
        plan = self._plans[kind] = (
            _how(kind),
            self.visits.get(name, []),
            self.leaves.get(name, []),
            fields,
        )
        return plan

    def _strings(self, node: ast.Constant) -> None:
        ctx = self.ctx
        if ctx.string_token(node) is None:
            start, end = ctx.source.span(node)
            if not self.anchors.search(ctx.source.data, start, end):
                return  # nothing a rule acts on in any part of this concatenation
        for part in ctx.string_parts(node):
            self._simple_string(part)

    def _simple_string(self, part: StringPart) -> None:
        for fn in self.visits.get("SimpleString", ()):
            fn(part)
        for fn in self.leaves.get("SimpleString", ()):
            fn(part)

    def _fstring(self, node: ast.JoinedStr, scope: Scope) -> None:
        ctx = self.ctx
        values = [v for v in node.values if isinstance(v, ast.FormattedValue)]
        if ctx.string_token(node) is not None:
            for fn in self.visits.get("FormattedString", ()):
                fn(node)
            self._formatted_values(values, scope)
            for fn in self.leaves.get("FormattedString", ()):
                fn(node)
            return
        start, end = ctx.source.span(node)
        if not self.anchors.search(ctx.source.data, start, end):
            self._formatted_values(values, scope)  # no rule acts on a part: only the code
            return
        for part in ctx.string_parts(node):
            if not part.fstring:
                self._simple_string(part)
                continue
            inside = [
                v
                for v in values
                if part.token.start <= ctx.source.span(v.value)[0] < part.token.end
            ]
            if part.token.body.startswith(self.fstring_device):
                self._fstring_part(part, inside, scope)
            else:
                for fn in self.visits.get("FormattedPart", ()):
                    fn(part)  # its text as written, placeholders and all
                self._formatted_values(inside, scope)

    def _fstring_part(
        self, part: StringPart, values: list[ast.FormattedValue], scope: Scope
    ) -> None:
        """A device f-string joined to other strings (``f"cuda:{i}" "..."``): the concerns'
        FormattedString hooks get the part as an f-string of its own, at its place."""
        node = self._fstring_alone(part)
        if part.docstring:
            self.ctx.docstrings.add(id(node))
        for fn in self.visits.get("FormattedString", ()):
            fn(node)
        self._formatted_values(values, scope)
        for fn in self.leaves.get("FormattedString", ()):
            fn(node)

    def _fstring_alone(self, part: StringPart) -> ast.JoinedStr:
        """The f-string token of ``part`` parsed alone, placed where the token is (kept alive
        with the walker: the pass's caches are keyed by node ids)."""
        source, token = self.ctx.source, part.token
        try:
            node = ast.parse(source.text(token.start, token.end), mode="eval").body
        except SyntaxError as exc:
            raise Decline("an f-string part that does not parse on its own") from exc
        assert isinstance(node, ast.JoinedStr)  # an f-string token alone
        node.lineno, node.end_lineno = source.line_of(token.start), source.line_of(token.end)
        node.col_offset = token.start - source.starts[node.lineno - 1]
        node.end_col_offset = token.end - source.starts[node.end_lineno - 1]
        self._alone.append(node)
        return node

    def _formatted_values(self, values: list[ast.FormattedValue], scope: Scope) -> None:
        self.ctx.in_fstring += 1
        for value in values:
            self._formatted_value(value, scope)
        self.ctx.in_fstring -= 1

    def _formatted_value(self, node: ast.FormattedValue, scope: Scope) -> None:
        self.walk(node.value, scope)
        spec = node.format_spec
        if isinstance(spec, ast.JoinedStr):
            for value in spec.values:
                if isinstance(value, ast.FormattedValue):
                    self._formatted_value(value, scope)

    # -- children in source order -------------------------------------------------------------
    def children(self, node: ast.AST, scope: Scope) -> Iterator[tuple[ast.AST, Scope]]:
        scopes = self.ctx.scopes
        if isinstance(node, ast.Call):
            yield node.func, scope
            items: list[ast.expr | ast.keyword] = [*node.args, *node.keywords]
            if node.args and node.keywords:
                items.sort(key=lambda n: (n.lineno, n.col_offset))
            for item in items:
                yield item, scope
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if key is not None:
                    yield key, scope
                yield value, scope
        elif isinstance(node, ast.IfExp):
            yield node.body, scope
            yield node.test, scope
            yield node.orelse, scope
        elif isinstance(node, ast.Lambda):
            yield from self._arguments(node.args, scope)
            yield node.body, scopes.scope_of(node, scope)
        elif isinstance(node, COMPREHENSIONS):
            inner = scopes.scope_of(node, scope)
            if isinstance(node, ast.DictComp):
                yield node.key, inner
                yield node.value, inner
            else:
                yield node.elt, inner
            for i, gen in enumerate(node.generators):
                yield gen.target, inner
                yield gen.iter, scope if i == 0 else inner
                for cond in gen.ifs:
                    yield cond, inner
        elif isinstance(node, (*FUNCTIONS, ast.ClassDef)):
            raise Decline("a definition inside a statement")  # never: definitions are units
        else:
            for child in ast.iter_child_nodes(node):
                if not isinstance(child, _SKIP):
                    yield child, scope

    def _arguments(self, args: ast.arguments, scope: Scope) -> Iterator[tuple[ast.AST, Scope]]:
        """Annotations and defaults of parameters, read in the defining scope."""
        positional = [*args.posonlyargs, *args.args]
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        pairs = list(zip(positional, defaults))
        if args.vararg:
            pairs.append((args.vararg, None))
        pairs += list(zip(args.kwonlyargs, args.kw_defaults))
        if args.kwarg:
            pairs.append((args.kwarg, None))
        for arg, default in pairs:
            if arg.annotation is not None:
                yield arg.annotation, scope
            if default is not None:
                yield default, scope
