"""What a ``tf.data`` batch call of a TF 1.x file feeds: a training pipeline, an evaluation or
inference one, or one the code does not tell (tf_batches.py decides what to do with it).

Read from the code around the call, nearest first: the ``if`` branches that hold it (``if
is_training:``, ``if mode == tf.estimator.ModeKeys.TRAIN:``, their ``else``), the functions and
classes that hold it (their names: ``train_input_fn``, ``eval_fn``, ``get_infer_iterator``, or
how the file uses the function: ``estimator.train(input_fn=f)``, ``tf.estimator.EvalSpec(f)``,
``f(is_training=False)``); then whether the dataset is repeated without end before it is
batched (no batch is ever partial then)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

TRAIN = "train"
EVAL = "eval"  # evaluation, validation, test, prediction, inference, export

_TRAIN_WORDS = frozenset(
    {"train", "training", "trainer", "trains", "pretrain", "pretraining", "finetune", "finetuning"}
)
_EVAL_WORDS = frozenset(
    {
        "eval",
        "evaluate",
        "evaluation",
        "evaluating",
        "evaluator",
        "valid",
        "validate",
        "validation",
        "validating",
        "val",
        "test",
        "testing",
        "tests",
        "predict",
        "prediction",
        "predictions",
        "infer",
        "inference",
        "serving",
        "export",
    }
)
# calls that take an input function, and the role it plays: estimator.train(input_fn=...), ...
_INPUT_FN_CALLS = {
    "train": TRAIN,
    "TrainSpec": TRAIN,
    "evaluate": EVAL,
    "predict": EVAL,
    "EvalSpec": EVAL,
}
_MODE_KEYS = {"TRAIN": TRAIN, "EVAL": EVAL, "PREDICT": EVAL, "INFER": EVAL}
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def name_role(name: str) -> str | None:
    """What a name says: ``train_input_fn`` TRAIN, ``get_infer_iterator`` EVAL, ``input_fn``
    or ``train_and_eval`` (both) None."""
    words = {w.lower() for w in _WORD.findall(name)}
    train, evaluation = bool(words & _TRAIN_WORDS), bool(words & _EVAL_WORDS)
    if train == evaluation:
        return None
    return TRAIN if train else EVAL


def function_uses(module: ast.Module, seen: dict[str, set[str]]) -> None:
    """The functions (a piece of) the file passes to an Estimator's train / evaluate / predict
    (or a TrainSpec / EvalSpec) as input_fn, and those it calls with ``is_training=True/False``
    or ``mode=tf.estimator.ModeKeys.X``: name -> the roles they are used in, added to
    ``seen``."""
    for node in ast.walk(module):
        if not isinstance(node, ast.Call):
            continue
        called = _last_name(node.func)
        role = _INPUT_FN_CALLS.get(called or "")
        if role is not None:
            value = _input_fn(node)
            name = _function_named(value) if value is not None else None
            if name:
                seen.setdefault(name, set()).add(role)
        if called:
            for keyword in node.keywords:
                role = _keyword_role(keyword)
                if role is not None:
                    seen.setdefault(called, set()).add(role)


def file_roles(seen: dict[str, set[str]]) -> dict[str, str]:
    """The role of each function the file uses in one role only (function_uses)."""
    return {name: next(iter(roles)) for name, roles in seen.items() if len(roles) == 1}


def context_role(
    ancestors: tuple[ast.AST, ...], stmt: ast.AST, roles: dict[str, str]
) -> tuple[str, str] | None:
    """The role the code holding ``stmt`` gives it, nearest first, and what says it: the
    branch of an ``if`` on training, the name of a function or class, how the file uses the
    function (``roles``); None when nothing tells."""
    child = stmt
    for parent in reversed(ancestors):
        found = _after_return(parent, child)
        if found is not None:
            return found
        if isinstance(parent, ast.If):
            body, orelse = test_roles(parent.test)
            inside = any(s is child for s in parent.body)
            role = body if inside else orelse
            if role is not None:
                where = "inside" if inside else "in the else of"
                found = (role, f"{where} `if {_text(parent.test)}:`")
        elif isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            role = name_role(parent.name)
            what = "function" if not isinstance(parent, ast.ClassDef) else "class"
            if role is not None:
                found = (role, f"{what} {parent.name}")
            elif what == "function" and parent.name in roles:
                used = "training" if roles[parent.name] == TRAIN else "evaluation or prediction"
                found = (roles[parent.name], f"{parent.name}, used for {used}")
        if found is not None:
            return found
        child = parent
    return None


def _after_return(parent: ast.AST, child: ast.AST) -> tuple[str, str] | None:
    """The role an earlier ``if`` of the block gives ``child`` when its body returns: the code
    after ``if mode == ModeKeys.TRAIN: return ...`` is the ``else`` of that test."""
    block = next((b for b in _blocks(parent) if any(s is child for s in b)), [])
    for earlier in reversed(block[: next((i for i, s in enumerate(block) if s is child), 0)]):
        if isinstance(earlier, ast.If) and not earlier.orelse:
            if isinstance(earlier.body[-1], (ast.Return, ast.Raise)):
                role = test_roles(earlier.test)[1]
                if role is not None:
                    return role, f"after `if {_text(earlier.test)}:` returns"
    return None


def test_roles(test: ast.expr) -> tuple[str | None, str | None]:
    """The role of the code an ``if`` test runs (its body) and of its ``else``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        body, orelse = test_roles(test.operand)
        return orelse, body
    if isinstance(test, ast.BoolOp):
        roles = {test_roles(v)[0] for v in test.values} - {None}
        if isinstance(test.op, ast.And) and len(roles) == 1:
            return next(iter(roles)), None
        return None, None
    if isinstance(test, (ast.Name, ast.Attribute)):
        role = name_role(_last_name(test) or "")
        return role, (EVAL if role == TRAIN else None)  # (not training: evaluation)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op = test.ops[0]
        if not isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
            return None, None
        role = _value_role(test.comparators[0]) or _value_role(test.left)
        other = EVAL if role == TRAIN else None  # (not TRAIN: EVAL or PREDICT)
        if isinstance(op, (ast.Eq, ast.Is)):
            return role, other
        return other, role
    return None, None


def repeats_before(value: ast.expr, ancestors: tuple[ast.AST, ...], stmt: ast.AST) -> bool:
    """Whether the dataset ``value`` is repeated without end before it is batched: a
    ``.repeat()`` with no count (or ``apply(shuffle_and_repeat(n))``) in its chain of calls,
    followed through the plain assignments of the name before ``stmt`` in its function."""
    for _ in range(64):  # (a chain of assignments is followed this many steps at most)
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            if _repeats(value):
                return True
            value = value.func.value
        if not isinstance(value, ast.Name):
            return False
        found = _assigned_before(value.id, ancestors, stmt)
        if found is None:
            return False
        value, stmt, ancestors = found
    return False


def _repeats(call: ast.Call) -> bool:
    func = call.func
    assert isinstance(func, ast.Attribute)
    if func.attr == "repeat":
        return _no_count([*call.args, *(k.value for k in call.keywords if k.arg == "count")])
    if func.attr == "apply" and len(call.args) == 1 and isinstance(call.args[0], ast.Call):
        inner = call.args[0]
        if _last_name(inner.func) == "shuffle_and_repeat":
            counts = [*inner.args[1:2], *(k.value for k in inner.keywords if k.arg == "count")]
            return _no_count(counts)
    return False


def _no_count(values: list[ast.expr]) -> bool:
    """A repeat count that means without end: none, None or -1."""
    if not values:
        return True
    value = values[0]
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
        value = value.operand
        return isinstance(value, ast.Constant) and value.value == 1
    return isinstance(value, ast.Constant) and value.value is None


def _assigned_before(
    name: str, ancestors: tuple[ast.AST, ...], stmt: ast.AST
) -> tuple[ast.expr, ast.AST, tuple[ast.AST, ...]] | None:
    """The value of the last plain assignment ``name = value`` before ``stmt``, in its block
    or the blocks around it within the function; None when there is none or a compound
    statement between them may assign it."""
    while ancestors:
        parent = ancestors[-1]
        block = next((b for b in _blocks(parent) if any(s is stmt for s in b)), [])
        index = next(i for i, s in enumerate(block) if s is stmt) if block else 0
        for earlier in reversed(block[:index]):
            if isinstance(earlier, ast.Assign) and _binds(earlier.targets, name):
                if len(earlier.targets) != 1 or not isinstance(earlier.targets[0], ast.Name):
                    return None
                return earlier.value, earlier, ancestors
            if any(_stores(n, name) for n in ast.walk(earlier)):
                return None
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return None
        stmt, ancestors = parent, ancestors[:-1]
    return None


def _blocks(node: ast.AST) -> Iterator[list[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(node, field, None)
        if isinstance(block, list):
            yield block
    for handler in getattr(node, "handlers", None) or []:
        yield handler.body


def _binds(targets: list[ast.expr], name: str) -> bool:
    return any(_stores(n, name) for t in targets for n in ast.walk(t))


def _stores(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)


def _input_fn(call: ast.Call) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == "input_fn":
            return keyword.value
    return call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else None


def _function_named(value: ast.expr) -> str | None:
    """The function an input_fn argument names: ``f``, ``self.f``, ``lambda: f(...)``,
    ``functools.partial(f, ...)``, ``make_input_fn(...)`` (the builder)."""
    if isinstance(value, ast.Lambda):
        value = value.body
    if isinstance(value, ast.Call):
        if _last_name(value.func) == "partial" and value.args:
            return _last_name(value.args[0])
        return _last_name(value.func)
    return _last_name(value)


def _keyword_role(keyword: ast.keyword) -> str | None:
    """``is_training=True`` TRAIN, ``training=False`` EVAL, ``mode=ModeKeys.EVAL`` EVAL."""
    value = keyword.value
    if keyword.arg is None:
        return None
    if isinstance(value, ast.Constant) and isinstance(value.value, bool):
        if name_role(keyword.arg) == TRAIN:
            return TRAIN if value.value else EVAL
        return None
    if keyword.arg == "mode":
        return _value_role(value)
    return None


def _value_role(value: ast.expr) -> str | None:
    """``tf.estimator.ModeKeys.TRAIN`` TRAIN, ``"eval"`` EVAL."""
    if isinstance(value, ast.Attribute) and isinstance(value.value, (ast.Attribute, ast.Name)):
        if _last_name(value.value) == "ModeKeys":
            return _MODE_KEYS.get(value.attr)
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return name_role(value.value) if len(value.value) < 40 else None
    return None


def _last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _text(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."
