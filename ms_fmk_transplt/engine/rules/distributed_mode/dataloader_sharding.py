"""The DistributedSampler of a training DataLoader (``distributed -m``, rule
distributed_mode.sampler): the rewrite of the call, and what a ``**kwargs`` dict holds.

A loader configured through ``**train_kwargs`` is sharded when that dict is a literal of the
same function (``train_kwargs = {"batch_size": 64}``, ``dict(batch_size=64)``) whose other uses
are updates with literals (``train_kwargs.update(cuda_kwargs)`` with ``cuda_kwargs`` a literal,
``train_kwargs["shuffle"] = True``) or reads: then every key it may hold is known. Whether it
shuffles is decided at run time by the same dict, so the rewrite reads it:
``DataLoader(ds, sampler=DistributedSampler(ds, shuffle=kw.get("shuffle", False)),
**{**kw, "shuffle": False})`` (the user's dict is not modified).

A dict that shuffles may also reach an evaluation loader (``test_loader = DataLoader(test_set,
**kwargs)`` beside the training one, or ``test_kwargs.update(cuda_kwargs)`` with a shuffling
``cuda_kwargs``): sharded, each rank would score 1/N of the test set. Such a loader is told by
its names (``kwargs_role``): named as evaluation (``test_loader``, ``val_set``) it stays whole;
sharing its dict with another loader and neither named so, it cannot be told and is open work.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.helpers import get_full_name_for_node

from ms_fmk_transplt.engine.base import literal_value

_READS = frozenset({"get", "keys", "items", "values", "copy"})
_DEPTH = 4  # dicts updated from dicts updated from ...: deeper is unknown


@dataclass(frozen=True)
class LoaderKwargs:
    """What a ``**name`` dict of a DataLoader call may hold."""

    name: str
    keys: frozenset[str]
    shuffles: bool  # a "shuffle" key with a value other than False may be set


def kwargs_name(call: cst.Call) -> str | None:
    """The name of the single ``**name`` argument of a call (None: none, or not a name)."""
    stars = [a for a in call.args if a.star == "**"]
    if len(stars) != 1 or not isinstance(stars[0].value, cst.Name):
        return None
    return stars[0].value.value


# test_loader, val_set, eval_dl, testset, dataset_valid, dev_data -- not device, interval, latest
_EVALUATION = re.compile(
    r"(?:^|[^a-z])(?:test|val|valid|validation|eval|evaluation|dev)"
    r"(?:set|sets|loader|data|dataset|dl|ds|iter)?(?:[^a-z]|$)"
)
TRAIN, EVALUATION, UNKNOWN = "train", "evaluation", "unknown"
Loader = tuple[cst.Call, "str | None"]  # a DataLoader call and the variable it is assigned to


SHARED_TIP = (
    "shard the training loader with a DistributedSampler; an evaluation loader stays whole "
    "(each rank would score 1/N of it)"
)


def evaluation_message(loader: Loader, name: str) -> str:
    shown = loader[1] or "DataLoader"
    return (
        f"{shown} shuffles through **{name} but is named as evaluation: not sharded, every "
        "rank reads all of it"
    )


def shared_message(name: str) -> str:
    return (
        f"DataLoader sharing **{name} with another loader, neither named as evaluation: which "
        "one trains cannot be told, so it is not sharded"
    )


def assigned_name(stmt: cst.BaseStatement, call: cst.Call) -> str | None:
    """``name`` of ``name = <call>`` (the variable a DataLoader is assigned to), else None."""
    if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assign):
        assign = stmt.body[0]
        if assign.value is call and len(assign.targets) == 1:
            return get_full_name_for_node(assign.targets[0].target)
    return None


def _dataset_name(call: cst.Call) -> str:
    for arg in call.args:
        keyword = arg.keyword.value if arg.keyword else None
        if (keyword is None and not arg.star) or keyword == "dataset":
            return get_full_name_for_node(arg.value) or ""
    return ""


def evaluation_named(loader: Loader) -> bool:
    """Whether the loader's variable or its dataset is named as evaluation data."""
    call, variable = loader
    return any(_EVALUATION.search(n.lower()) for n in (variable or "", _dataset_name(call)) if n)


def kwargs_role(loader: Loader, name: str, loaders: Sequence[Loader]) -> str:
    """TRAIN, EVALUATION or UNKNOWN: the role of a loader whose shuffling comes from
    ``**name``, told by its names and by the other loaders of its scope that share ``name``."""
    if evaluation_named(loader):
        return EVALUATION
    sharing = [other for other in loaders if other[0] is not loader[0]]
    sharing = [other for other in sharing if kwargs_name(other[0]) == name]
    if not sharing or any(evaluation_named(other) for other in sharing):
        return TRAIN
    return UNKNOWN


def resolve_kwargs(statements: Sequence[cst.CSTNode], name: str) -> LoaderKwargs | None:
    """The keys of dict ``name`` when it is a literal of these statements (a function body, or a
    module's top-level code) only updated with literals; None when that is not known."""
    values = _dict_values(statements, name, _DEPTH)
    if values is None:
        return None
    shuffle = values.get("shuffle", [])
    shuffles = any(get_full_name_for_node(v) != "False" for v in shuffle)
    return LoaderKwargs(name, frozenset(values), shuffles)


def _dict_values(
    statements: Sequence[cst.CSTNode], name: str, depth: int
) -> dict[str, list[cst.BaseExpression]] | None:
    """Key -> the values it may be given; None when the dict is not a known literal."""
    if depth == 0:
        return None
    uses = _Uses(name)
    for stmt in statements:
        stmt.visit(uses)
    if uses.opaque or uses.names != uses.known or len(uses.bindings) != 1:
        return None
    if not isinstance(uses.bindings[0], (cst.Dict, cst.Call)):  # an alias shares its dict
        return None
    values: dict[str, list[cst.BaseExpression]] = {}
    for source in [uses.bindings[0], *uses.updates]:
        found = _literal_values(statements, source, depth)
        if found is None:
            return None
        for key, given in found.items():
            values.setdefault(key, []).extend(given)
    for key, value in uses.items:
        values.setdefault(key, []).append(value)
    return values


def _literal_values(
    statements: Sequence[cst.CSTNode], node: cst.CSTNode, depth: int
) -> dict[str, list[cst.BaseExpression]] | None:
    """The keys and values of a dict literal, ``dict(k=v)``, or a name of another such dict."""
    if isinstance(node, cst.Name):
        return _dict_values(statements, node.value, depth - 1)
    out: dict[str, list[cst.BaseExpression]] = {}
    if isinstance(node, cst.Dict):
        for element in node.elements:
            if isinstance(element, cst.StarredDictElement):
                inner = _literal_values(statements, element.value, depth)
                if inner is None:
                    return None
                for key, given in inner.items():
                    out.setdefault(key, []).extend(given)
                continue
            assert isinstance(element, cst.DictElement)  # the other BaseDictElement
            literal_key = _string(element.key)
            if literal_key is None:
                return None
            out.setdefault(literal_key, []).append(element.value)
        return out
    if isinstance(node, cst.Call) and get_full_name_for_node(node.func) == "dict":
        for arg in node.args:
            if arg.keyword is None:
                return None
            out.setdefault(arg.keyword.value, []).append(arg.value)
        return out
    return None


def _string(node: cst.BaseExpression) -> str | None:
    value = literal_value(node)
    return value if isinstance(value, str) else None


class _Uses(cst.CSTVisitor):
    """Every occurrence of a name in some statements (nested functions and classes aside), and
    the ones understood: one binding, literal updates, reads, ``**name``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.names = 0  # occurrences of the name
        self.known = 0  # occurrences understood
        self.opaque = False  # updated with *args or **more
        self.bindings: list[cst.BaseExpression] = []
        self.updates: list[cst.BaseExpression] = []  # name.update(<these>)
        self.items: list[tuple[str, cst.BaseExpression]] = []  # name["k"] = v

    def _is_name(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Name) and node.value == self.name

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.names += node.value == self.name

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if self._is_name(target.target):
                self.bindings.append(node.value)
                self.known += 1
            elif isinstance(target.target, cst.Subscript) and self._is_name(target.target.value):
                key = _subscript_key(target.target)
                if key is not None:
                    self.items.append((key, node.value))
                    self.known += 1

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.star == "**" and self._is_name(node.value):
            self.known += 1

    def visit_StarredDictElement(self, node: cst.StarredDictElement) -> None:
        self.known += self._is_name(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        if self._is_name(func.value) and func.attr.value in _READS:
            self.known += 1
        elif self._is_name(func.value) and func.attr.value == "update":
            self.known += 1
            keywords = {a.keyword.value: a.value for a in node.args if a.keyword}
            positional = [a.value for a in node.args if not a.keyword and not a.star]
            if len(positional) + len(keywords) != len(node.args) or len(positional) > 1:
                self.opaque = True
            self.updates.extend(positional)
            self.items.extend(keywords.items())
        elif func.attr.value == "update" and any(self._is_name(a.value) for a in node.args):
            self.known += sum(self._is_name(a.value) and not a.star for a in node.args)


def _subscript_key(node: cst.Subscript) -> str | None:
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    return _string(node.slice[0].slice.value)


def _sampler(func: str, dataset: cst.BaseExpression, shuffle: cst.BaseExpression) -> cst.Call:
    return cst.Call(
        func=cst.parse_expression(func),
        args=[
            cst.Arg(dataset, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(shuffle, keyword=cst.Name("shuffle"), equal=_EQUAL),
        ],
    )


_EQUAL = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
_SPACE = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def _bound_dataset(args: list[cst.Arg]) -> cst.BaseExpression:
    """The dataset argument, bound once with ``msft_dataset := ...`` when built inline."""
    index = next(i for i, a in enumerate(args) if a.keyword is None or a.keyword.value == "dataset")
    dataset = args[index].value
    if isinstance(dataset, (cst.Name, cst.Attribute, cst.Subscript)):
        return dataset
    walrus = cst.NamedExpr(target=cst.Name("msft_dataset"), value=dataset)
    args[index] = args[index].with_changes(value=walrus)
    return cst.Name("msft_dataset")


def shard_call(updated: cst.Call, sampler: str) -> cst.Call:
    """``sampler=DistributedSampler(dataset, shuffle=...)`` in place of the loader's shuffle."""
    args = list(updated.args)
    dataset = _bound_dataset(args)
    shuffle = next((a for a in args if a.keyword and a.keyword.value == "shuffle"), None)
    shuffle_value = shuffle.value if shuffle is not None else cst.Name("False")
    new_sampler = _sampler(sampler, dataset, shuffle_value)
    kept = [a for a in args if not (a.keyword and a.keyword.value in ("shuffle", "sampler"))]
    if shuffle is not None:
        position = args.index(shuffle)
        new_arg = shuffle.with_changes(keyword=cst.Name("sampler"), value=new_sampler)
        kept.insert(min(position, len(kept)), new_arg)
    else:
        last = kept[-1]
        if last.comma is cst.MaybeSentinel.DEFAULT:
            kept[-1] = last.with_changes(comma=_SPACE)
        kept.append(cst.Arg(new_sampler, keyword=cst.Name("sampler"), equal=_EQUAL))
    return updated.with_changes(args=kept)


def shard_kwargs_call(updated: cst.Call, sampler: str, name: str) -> cst.Call:
    """The loader of a ``**name`` literal dict: the sampler shuffles as the dict says, and the
    dict's own shuffle is overridden (DataLoader refuses shuffle=True with a sampler)."""
    args = list(updated.args)
    dataset = _bound_dataset(args)
    shuffle = cst.parse_expression(f'{name}.get("shuffle", False)')
    star = next(i for i, a in enumerate(args) if a.star == "**")
    merged = cst.parse_expression(f'{{**{name}, "shuffle": False}}')
    args[star] = args[star].with_changes(value=merged)
    new_arg = cst.Arg(_sampler(sampler, dataset, shuffle), keyword=cst.Name("sampler"))
    args.insert(star, new_arg.with_changes(equal=_EQUAL, comma=_SPACE))
    if star and args[star - 1].comma is cst.MaybeSentinel.DEFAULT:
        args[star - 1] = args[star - 1].with_changes(comma=_SPACE)
    return updated.with_changes(args=args)
