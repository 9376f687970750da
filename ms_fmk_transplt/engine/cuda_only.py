"""A CUDA condition that selects CUDA-only code keeps its CUDA (rule cuda_only.guard, declared
and explained in engine/spans/cuda_only_spans.py, the span pass's counterpart).

Which code is CUDA-only is decided on the stdlib tree of the file, as in the span pass: the
guarded region's code is printed and parsed with ``ast`` (this pass is the rare one), so both
passes ask the same question of the same names."""

from __future__ import annotations

import ast
from typing import cast

import libcst as cst
from libcst.helpers import get_full_name_for_node

from ms_fmk_transplt.engine.base import Concern, literal_value
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.spans.cuda_only_code import CUDA_VALUE
from ms_fmk_transplt.engine.spans.cuda_only_hints import has_condition, hinted
from ms_fmk_transplt.engine.spans.cuda_only_spans import (
    GUARD,
    REGISTRARS,
    REGISTRATION,
    RULE,
    guard_message,
    guarded_code,
    registration_message,
)
from ms_fmk_transplt.engine.spans.cuda_predicates import kept_predicates, predicate_message

_EMPTY = cst.Module(body=[])


def _is_cuda_string(node: cst.CSTNode) -> bool:
    value = literal_value(node)
    return isinstance(value, str) and CUDA_VALUE.fullmatch(value) is not None


def _items(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return [e.value for e in node.elements]
    return [node]


def cuda_conditions(test: cst.CSTNode) -> list[cst.CSTNode]:
    """As cuda_only_spans.cuda_conditions, on LibCST nodes (in source order)."""
    found: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def visit_Comparison(self, node: cst.Comparison) -> None:
            sides = [node.left, *(t.comparator for t in node.comparisons)]
            found.extend(i for s in sides for i in _items(s) if _is_cuda_string(i))

        def visit_Attribute(self, node: cst.Attribute) -> None:
            if node.attr.value == "is_cuda":
                found.append(node)

    test.visit(Collect())
    return found


def _expression(node: cst.CSTNode) -> ast.AST | None:
    try:
        return ast.parse("(\n" + _EMPTY.code_for_node(node) + "\n)", mode="eval")
    except SyntaxError:
        return None


def statements_of(body: cst.BaseSuite) -> ast.AST | None:
    if isinstance(body, cst.IndentedBlock):
        # LibCST types a block's statements as BaseStatement, a module's as its two subclasses
        statements = list(body.body)
        module = cst.Module(
            body=cast("list[cst.SimpleStatementLine | cst.BaseCompoundStatement]", statements)
        )
    else:
        assert isinstance(body, cst.SimpleStatementSuite)  # the other BaseSuite
        module = cst.Module(body=[cst.SimpleStatementLine(body=list(body.body))])
    try:
        return ast.parse(module.code)
    except SyntaxError:
        return None


def _negated(test: cst.BaseExpression) -> bool:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return True
    return isinstance(test, cst.Comparison) and all(
        isinstance(t.operator, (cst.NotEqual, cst.NotIn)) for t in test.comparisons
    )


def _exits(body: cst.BaseSuite) -> bool:
    last = body.body[-1] if body.body else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1]
    return isinstance(last, (cst.Return, cst.Raise))


class CudaOnlyGuards(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        source = ctx.source  # a guard needs a condition, and CUDA-only code to select
        self.active = has_condition(source) and hinted(
            source, ctx.tables.unsupported, ctx.options.project
        )
        self.blocks: list[list[cst.BaseStatement]] = []  # the enclosing indented blocks
        self.depth = 0  # of function and class definitions

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if self.active:  # most files hold no CUDA-only code: no block stack kept
            self.blocks.append(list(node.body))

    def leave_IndentedBlock(
        self, original: cst.IndentedBlock, updated: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        if self.active:
            self.blocks.pop()
        return updated

    def _following(self, node: cst.If) -> ast.AST | None:
        block = self.blocks[-1] if self.blocks else []
        for i, stmt in enumerate(block):
            if stmt is node:
                return statements_of(cst.IndentedBlock(body=block[i + 1 :]))
        return statements_of(cst.IndentedBlock(body=[]))

    def visit_If(self, node: cst.If) -> None:
        if not self.active:
            return
        if _negated(node.test) and _exits(node.body):  # if not x.is_cuda: return fallback(x)
            self._guard(node.test, [_expression(node.test), self._following(node)])
        else:
            self._guard(node.test, [_expression(node.test), statements_of(node.body)])

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        if self.active and isinstance(node.operator, cst.And):
            self._guard(node, [_expression(node)])

    def visit_IfExp(self, node: cst.IfExp) -> None:
        if self.active:
            self._guard(node.test, [_expression(node.test), _expression(node.body)])

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.depth += 1

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        self.depth -= 1
        return updated

    def leave_FunctionDef(
        self, original: cst.FunctionDef, updated: cst.FunctionDef
    ) -> cst.FunctionDef:
        self.depth -= 1
        return updated

    def _predicate(self, node: cst.FunctionDef) -> None:
        """A module-level predicate function that selects CUDA-only code keeps its conditions
        (engine/spans/cuda_predicates.py)."""
        table = self.tables.unsupported
        found = kept_predicates(self.ctx.source, table, self.ctx.options.project, self.ctx.path)
        what = found.get(node.name.value)
        conditions = [c for c in cuda_conditions(node.body) if not self.ctx.is_claimed(c)]
        if what is None or not conditions:
            return
        for c in conditions:
            self.ctx.claim(c)
        message = predicate_message(node.name.value, what)
        self.ctx.unsupported(conditions[0], node.name.value, GUARD, message, RULE)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth += 1
        if not self.active:
            return
        if self.depth == 1:
            self._predicate(node)
        strings = [
            s
            for d in node.decorators
            if isinstance(d.decorator, cst.Call)
            and (get_full_name_for_node(d.decorator) or "").rsplit(".", 1)[-1] in REGISTRARS
            for arg in d.decorator.args
            if arg.keyword is None or arg.keyword.value == "device_types"
            for s in _items(arg.value)
            if _is_cuda_string(s) and not self.ctx.is_claimed(s)
        ]
        if not strings:
            return
        what = self._uses([statements_of(node.body)])
        if what is None:
            return
        for s in strings:
            self.ctx.claim(s)
        message = registration_message(what)
        self.ctx.unsupported(strings[0], node.name.value, REGISTRATION, message, RULE)

    def _uses(self, region: list[ast.AST | None]) -> str | None:
        parsed = [r for r in region if r is not None]
        if len(parsed) < len(region):  # a part Python could not parse
            return None
        table = self.tables.unsupported
        return guarded_code(parsed, self.ctx.source, table, self.ctx)

    def _guard(self, test: cst.CSTNode, region: list[ast.AST | None]) -> None:
        conditions = [c for c in cuda_conditions(test) if not self.ctx.is_claimed(c)]
        if not conditions:
            return
        what = self._uses(region)
        if what is None:
            return
        for c in conditions:
            self.ctx.claim(c)
        api = what.split(" ", 1)[0]
        self.ctx.unsupported(conditions[0], api, GUARD, guard_message(what), RULE)
