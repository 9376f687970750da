"""User rules from -r/--rule (rule ids user_rules.ArgsModifyRule, user_rules.FuncNameModifyRule,
user_rules.ModuleNameModifyRule; each change's message starts with the rule's position in the file,
e.g. ``ArgsModifyRule[0]``); loaded and validated by ms_fmk_transplt/tables/user_rule_file.py.

They run as a first pass, before the built-in table, so the built-in rules see their result.
Names resolve through imports exactly like the built-in table. This pass never adds or removes
lines, so both passes share line numbers.

* ArgsModifyRule: in calls of ``func_name`` (a dotted name resolved through imports such as
  ``torch.load``; a bare name, matching calls written with that name; or ``.method`` for a
  method of any object) set the argument at position
  ``arg_idx`` and/or keyword ``arg_name`` to the expression ``arg_new``; ``"delete": true`` removes
  it. A missing argument is added as ``arg_name=arg_new`` (or appended when exactly ``arg_idx``
  positional arguments precede it).
* FuncNameModifyRule: references to ``old_name`` (dotted: resolved through imports; bare: every
  use of that name, not its definition) become ``new_name``; a from-import of it becomes
  ``from <new parent> import <new leaf> as <the bound name>`` so every use keeps working.
* ModuleNameModifyRule: module ``parent.old`` becomes ``parent.new`` in imports and attribute
  chains (``from parent import old`` becomes ``from parent import new as old``).
"""

from __future__ import annotations

from typing import Union

import libcst as cst
from libcst.helpers import get_full_name_for_node

from ms_fmk_transplt.catalogue.rule_catalog import ANSWERS_API, OPEN_WORK, declare
from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.rules.todo.todo_comments import CATEGORY, todo_comment, todo_text
from ms_fmk_transplt.tables.unsupported_table import Entry
from ms_fmk_transplt.tables.user_rule_file import (
    ArgsModify,
    FuncNameModify,
    ModuleNameModify,
    UserRules,
)

_OPTION = "-r RULES.json"
_MESSAGE = (
    " Each change's message starts with the rule's kind and position in your file "
    "(`{kind}[0]`), so a row leads back to the rule that made it."
)
INCOMPLETE = declare(
    "user_rules.incomplete",
    "your -r rule: a rename the file cannot use as is (a missing import): manual row",
    "A FuncNameModifyRule to a dotted `new_name` whose module the file does not import leaves "
    "code that raises NameError (except a name in `torch_npu`, `torch_npu.npu` or "
    "`torch_npu.optim`: the `import torch_npu` the file then gets loads those), and a "
    "from-import of several names cannot be re-pointed for one of them. The rename is done "
    "where it can be; each such place is an open-work row (category `incomplete_migration`) and "
    "its line gets a `# msft: TODO[user_rules.incomplete]` comment saying what to add.",
    kind=OPEN_WORK,
    option=_OPTION,
    answers=ANSWERS_API,
)
RULE_OF_KIND = {
    ArgsModify: declare(
        "user_rules.ArgsModifyRule",
        "your -r rule: set, add or delete an argument in calls of a function",
        "In calls of `func_name` (a dotted name resolved through imports such as `torch.load`; a "
        "bare name, matching calls written with that name; or `.method` for a method of any "
        "object) the argument at position `arg_idx` and/or keyword `arg_name` is set to the "
        'expression `arg_new`, or removed with `"delete": true`. A missing argument is added as '
        "`arg_name=arg_new`. User rules run before the built-in rules, which see their result."
        + _MESSAGE.format(kind="ArgsModifyRule"),
        option=_OPTION,
        answers=ANSWERS_API,
        option_edit=True,
    ),
    FuncNameModify: declare(
        "user_rules.FuncNameModifyRule",
        "your -r rule: rename a function or class (`old_name` -> `new_name`)",
        "References to `old_name` (dotted: resolved through imports; bare: every use of that name, "
        "not its definition) become `new_name`; a from-import of it becomes `from <new parent> "
        "import <new leaf> as <the bound name>` so every use keeps working. A dotted `new_name` "
        "whose module the file does not import is a `user_rules.incomplete` row, except a name "
        "in a module `import torch_npu` loads (`torch_npu.optim.NpuFusedAdamW`): the file then "
        "gets that import." + _MESSAGE.format(kind="FuncNameModifyRule"),
        option=_OPTION,
        answers=ANSWERS_API,
        option_edit=True,
    ),
    ModuleNameModify: declare(
        "user_rules.ModuleNameModifyRule",
        "your -r rule: rename a module (`parent_module.old_name` -> `parent_module.new_name`)",
        "The module is renamed in imports and attribute chains; `from parent import old` becomes "
        "`from parent import new as old`, so later uses keep working."
        + _MESSAGE.format(kind="ModuleNameModifyRule"),
        option=_OPTION,
        answers=ANSWERS_API,
        option_edit=True,
    ),
}


Rule = Union[ArgsModify, FuncNameModify, ModuleNameModify]
# the modules `import torch_npu` loads (its __init__ imports them): a rename into one of them
# needs only that import, which imports.torch_npu inserts once the file changed
WITH_TORCH_NPU = frozenset({"torch_npu", "torch_npu.npu", "torch_npu.npu.amp", "torch_npu.optim"})


def _dotted(name: str) -> cst.BaseExpression:
    return cst.parse_expression(name)


def _with_prefix(name: str, old: str, new: str) -> str | None:
    if name == old:
        return new
    if name.startswith(old + "."):
        return new + name[len(old) :]
    return None


class UserRulesConcern(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        rules = ctx.options.user_rules
        assert isinstance(rules, UserRules)
        self.rules = rules
        self.skip_names: set[int] = set()  # binding names (def/class/params/targets), not uses
        self.todos: dict[int, str] = {}  # input line -> its TODO comment

    def _incomplete(self, node: cst.CSTNode, label: str, message: str, tip: str) -> None:
        """A rename that needs the user's hand: a row, and a TODO on the line."""
        self.ctx.unsupported(
            self.ctx.lines(node), label, Entry(label, CATEGORY, "manual", tip), message, INCOMPLETE
        )
        if self.ctx.options.todo_comments:
            self.todos[self.ctx.lines(node)[0]] = todo_text(INCOMPLETE, tip)

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        if not self.todos:  # (positions are computed on first use: only when needed)
            return updated
        start, end = self.ctx.lines(original)
        todo = next((t for line, t in self.todos.items() if start <= line <= end), None)
        return updated if todo is None else todo_comment(self.ctx, original, updated, todo)

    def _record(
        self,
        node: cst.CSTNode,
        rule: Rule,
        kind: str,
        before: cst.CSTNode,
        after: cst.CSTNode,
        needs_torch_npu: bool = False,
    ) -> None:
        self.ctx.record(
            self.ctx.lines(node),
            RULE_OF_KIND[type(rule)],
            f"{rule.label}: {kind}: {self.ctx.snippet(before)} -> {self.ctx.snippet(after)}",
            self.ctx.snippet(before),
            self.ctx.snippet(after),
            needs_torch_npu=needs_torch_npu,
        )

    # -- names that are bindings, not references --------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.skip_names.add(id(node.name))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.skip_names.add(id(node.name))

    def visit_Param(self, node: cst.Param) -> None:
        self.skip_names.add(id(node.name))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.skip_names.add(id(node.target))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.skip_names.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.skip_names.add(id(node.keyword))

    # -- ArgsModifyRule ----------------------------------------------------------------------
    def _matches(self, rule: ArgsModify, func: cst.BaseExpression) -> bool:
        if rule.func_name.startswith("."):
            return isinstance(func, cst.Attribute) and func.attr.value == rule.func_name[1:]
        if "." not in rule.func_name:  # a bare name: calls written with that name
            return isinstance(func, cst.Name) and func.value == rule.func_name
        return self.ctx.qname(func) == rule.func_name

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        for rule in self.rules.args:
            if self._matches(rule, original.func):
                updated = self._apply_args(rule, original, updated)
        return updated

    def _apply_args(self, rule: ArgsModify, original: cst.Call, updated: cst.Call) -> cst.Call:
        args = list(updated.args)
        positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
        index = None
        if rule.arg_idx is not None and rule.arg_idx < len(positional):
            index = positional[rule.arg_idx]
        elif rule.arg_name is not None:
            index = next(
                (
                    i
                    for i, a in enumerate(args)
                    if a.keyword is not None and a.keyword.value == rule.arg_name
                ),
                None,
            )
        if rule.arg_new is None:  # delete
            if index is None:
                return updated
            removed = args.pop(index)
            if index == len(args) and args:
                args[-1] = args[-1].with_changes(comma=removed.comma)
            new = updated.with_changes(args=args)
            self._record(original, rule, "argument removed", updated, new)
            return new
        value = _dotted(rule.arg_new)
        if index is not None:
            if self.ctx.code(args[index].value) == rule.arg_new:
                return updated  # already what the rule asks for (idempotence)
            args[index] = args[index].with_changes(value=value)
        elif rule.arg_name is not None:
            args = _append(
                args,
                cst.Arg(
                    value=value,
                    keyword=cst.Name(rule.arg_name),
                    equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""),
                        whitespace_after=cst.SimpleWhitespace(""),
                    ),
                ),
            )
        elif rule.arg_idx == len(positional) and not any(a.keyword or a.star for a in args):
            args = _append(args, cst.Arg(value=value))
        else:
            return updated
        new = updated.with_changes(args=args)
        self._record(original, rule, "argument set", updated, new)
        return new

    # -- FuncNameModifyRule / ModuleNameModifyRule on references ------------------------------
    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if id(original) in self.skip_names or self.ctx.import_depth:
            return updated
        for rule in self.rules.funcs:
            if "." not in rule.old_name and original.value == rule.old_name:
                new = _dotted(rule.new_name)
                self._record(original, rule, "renamed", original, new)
                return new
        return updated

    def leave_Attribute(
        self, original: cst.Attribute, updated: cst.Attribute
    ) -> cst.BaseExpression:
        if self.ctx.import_depth:
            return updated
        rule: Rule  # each loop below narrows it to its kind
        qn = self.ctx.qname(original)
        if not qn:
            return updated
        for rule in self.rules.funcs:
            if qn == rule.old_name and get_full_name_for_node(original) is not None:
                new = _dotted(rule.new_name)
                module = rule.new_name.rsplit(".", 1)[0]
                with_npu = module in WITH_TORCH_NPU
                if module.split(".")[0] not in self.ctx.module_bound and "." in rule.new_name:
                    if not with_npu:
                        self._incomplete(
                            original,
                            rule.label,
                            f"{rule.label}: {rule.new_name} needs `import {module}` in this file",
                            f"add `import {module}` to this file",
                        )
                self._record(original, rule, "renamed", original, new, needs_torch_npu=with_npu)
                return new
        for rule in self.rules.modules:
            if qn == rule.old and original.attr.value == rule.old_name:
                new = updated.with_changes(attr=updated.attr.with_changes(value=rule.new_name))
                self._record(original, rule, "module renamed", original, new)
                return new
        return updated

    # -- imports -----------------------------------------------------------------------------
    def leave_Import(self, original: cst.Import, updated: cst.Import) -> cst.Import:
        names = list(updated.names)
        for i, alias in enumerate(original.names):
            full = get_full_name_for_node(alias.name) or ""
            for rule in self.rules.modules:
                renamed = _with_prefix(full, rule.old, rule.new)
                if renamed is not None:
                    names[i] = names[i].with_changes(name=_dotted(renamed))
                    new = updated.with_changes(names=names)
                    self._record(original, rule, "module renamed", original, new)
                    break
        return updated.with_changes(names=names)

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom) -> cst.ImportFrom:
        if original.relative or original.module is None:
            return updated
        rule: Rule  # each loop below narrows it to its kind
        module = get_full_name_for_node(original.module) or ""
        for rule in self.rules.modules:
            renamed = _with_prefix(module, rule.old, rule.new)
            if renamed is not None:
                new = updated.with_changes(module=_dotted(renamed))
                self._record(original, rule, "module renamed", original, new)
                return new
        if isinstance(updated.names, cst.ImportStar):
            return updated
        assert not isinstance(original.names, cst.ImportStar)  # (as updated's)
        names = list(updated.names)
        changed: Rule | None = None
        for i, alias in enumerate(original.names):
            leaf = get_full_name_for_node(alias.name) or ""
            bound = alias.asname.name if alias.asname else cst.Name(leaf)
            for rule in self.rules.modules:
                if module == rule.parent and leaf == rule.old_name:
                    names[i] = names[i].with_changes(
                        name=cst.Name(rule.new_name), asname=cst.AsName(name=bound)
                    )
                    changed = rule
            for rule in self.rules.funcs:
                if f"{module}.{leaf}" == rule.old_name and "." in rule.new_name:
                    parent, new_leaf = rule.new_name.rsplit(".", 1)
                    if len(original.names) > 1 and parent != module:
                        self._incomplete(
                            alias,
                            rule.label,
                            f"{rule.label}: import {leaf} separately to rename it to "
                            f"{rule.new_name}",
                            f"import {leaf} on its own line (then run again)",
                        )
                        continue
                    asname = (
                        None
                        if get_full_name_for_node(bound) == new_leaf
                        else cst.AsName(name=bound)
                    )
                    names[i] = names[i].with_changes(name=cst.Name(new_leaf), asname=asname)
                    updated = updated.with_changes(module=_dotted(parent))
                    changed = rule
        if changed is None:
            return updated
        new = updated.with_changes(names=names)
        self._record(original, changed, "import renamed", original, new)
        return new


def _append(args: list[cst.Arg], arg: cst.Arg) -> list[cst.Arg]:
    if args:
        last = args[-1]
        if last.comma is cst.MaybeSentinel.DEFAULT:
            args[-1] = last.with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
        else:
            arg = arg.with_changes(comma=last.comma)
            args[-1] = last.with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
    return [*args, arg]
