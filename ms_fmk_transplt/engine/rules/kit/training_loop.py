"""Where a training script trains: the loop whose iterations are training steps.

A step is an optimizer update: ``<optimizer>.step()`` (a receiver whose name holds ``optim``, or
``opt``), a scaler given the optimizer (``scaler.step(optimizer)``, timm's ``loss_scaler(loss,
optimizer, ...)``); without any, a ``.backward()`` call. The training loop is the innermost
``for``/``while`` that holds a step, functions defined inside the loop counted (timm's
``_backward`` closure); a step in a function the file calls from a loop (``loss =
train_step(batch)``) makes that loop the training loop. So pytorch/examples' imagenet picks
``for i, (images, target) in enumerate(train_loader)`` in ``train`` (not ``validate``'s
look-alike loop: no step), nanoGPT its ``while True`` (the inner micro-step loop only runs
``backward``), timm ``train_one_epoch``'s batch loop.

A script without one (Lightning's ``trainer.fit``, transformers' ``Trainer.train()``), with
several (a GAN's generator and discriminator loops), or whose loop runs in a generator, an
``async def`` or a lambda is refused with one line saying which (NoTrainingLoop).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ms_fmk_transplt.engine.scope_model import full_name

LOOPS = (ast.For, ast.While)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class NoTrainingLoop(Exception):
    """``str(exc)``: why no single training loop was found (one line)."""


@dataclass(frozen=True)
class TrainingLoop:
    line: int  # the loop statement
    col: int
    body_line: int  # its body's first statement: where a per-step call goes
    body_col: int
    step: str  # the step it holds, as written (``optimizer.step()``)
    step_line: int
    function: str | None  # the function holding the loop (None: module level)


@dataclass(frozen=True)
class _Step:
    text: str
    line: int
    loops: tuple[ast.For | ast.While, ...]  # enclosing loops, innermost last
    functions: tuple[ast.AST, ...]  # enclosing functions and lambdas, innermost last


def _dotted(node: ast.AST) -> str:
    """``a.b`` for ``a.b`` (also through calls and subscripts: engine/scope_model.full_name),
    "" for anything else."""
    return full_name(node) or ""


def _is_optimizer(name: str) -> bool:
    last = name.rsplit(".", 1)[-1].lower()
    return "optim" in last or last in ("opt", "opt_g", "opt_d")


def _step_text(call: ast.Call) -> str | None:
    """The call as a step (``optimizer.step()``), a scaler given an optimizer, or None."""
    func, names = call.func, [_dotted(a) for a in call.args]
    names += [_dotted(k.value) for k in call.keywords]
    given = any(_is_optimizer(n) for n in names if n)
    if isinstance(func, ast.Attribute) and func.attr == "step":
        receiver = _dotted(func.value)
        if _is_optimizer(receiver) or ("scaler" in receiver.lower() and given):
            return f"{receiver}.step({'optimizer' if given else ''})"
    callee = _dotted(func)
    if callee and "scaler" in callee.rsplit(".", 1)[-1].lower() and given:
        return f"{callee}(..., optimizer, ...)"
    return None


class _Finder(ast.NodeVisitor):
    def __init__(self) -> None:
        self.loops: list[ast.For | ast.While] = []
        self.functions: list[ast.AST] = []
        self.steps: list[_Step] = []
        self.backwards: list[_Step] = []
        self.calls: list[tuple[str, ast.Call, tuple[ast.For | ast.While, ...]]] = []
        self.around: dict[int, tuple[ast.AST, ...]] = {}  # a loop's id -> the functions around it

    def _loop(self, node: ast.For | ast.While) -> None:
        self.around[id(node)] = tuple(self.functions)
        self.loops.append(node)
        self.generic_visit(node)
        self.loops.pop()

    visit_For = visit_While = _loop  # noqa: N815 (ast.NodeVisitor's names)

    def _function(self, node: ast.AST) -> None:
        self.functions.append(node)
        self.generic_visit(node)
        self.functions.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function  # noqa: N815

    def visit_Call(self, node: ast.Call) -> None:
        here = (tuple(self.loops), tuple(self.functions))
        text = _step_text(node)
        if text is not None:
            self.steps.append(_Step(text, node.lineno, *here))
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "backward":
            text = f"{_dotted(node.func.value)}.backward()"
            self.backwards.append(_Step(text, node.lineno, *here))
        callee = _dotted(node.func).rsplit(".", 1)[-1]
        if callee:
            self.calls.append((callee, node, tuple(self.loops)))
        self.generic_visit(node)


def find_training_loop(source: bytes | ast.Module, name: str = "the script") -> TrainingLoop:
    """The training loop of ``source`` (its tree, or its bytes: raises SyntaxError too);
    raises NoTrainingLoop."""
    finder = _Finder()
    finder.visit(source if isinstance(source, ast.Module) else ast.parse(source))
    steps = finder.steps or finder.backwards
    if not steps:
        raise NoTrainingLoop(
            f"no training loop found in {name}: no optimizer step (optimizer.step(), "
            "scaler.step(optimizer)) nor .backward() call (a trainer's fit() runs its own loop)"
        )
    found: dict[int, tuple[ast.For | ast.While, _Step, tuple[ast.AST, ...]]] = {}
    for step in steps:
        for loop, functions in _loops_of(step, finder):
            found.setdefault(id(loop), (loop, step, functions))
    if not found:
        raise NoTrainingLoop(
            f"no training loop found in {name}: {steps[0].text} (line {steps[0].line}) runs in "
            "no for/while loop of the file"
        )
    if len(found) > 1:
        lines = ", ".join(str(loop.lineno) for loop, _, _ in sorted(found.values(), key=_line))
        raise NoTrainingLoop(f"several training loops in {name} (lines {lines}): choose one")
    loop, step, functions = next(iter(found.values()))
    _check_runs_plainly(loop, functions, name)
    first = loop.body[0]
    owner = next((f for f in reversed(functions) if isinstance(f, _FUNCTIONS)), None)
    return TrainingLoop(
        loop.lineno,
        loop.col_offset,
        first.lineno,
        first.col_offset,
        step.text,
        step.line,
        owner.name if isinstance(owner, _FUNCTIONS) else None,
    )


def _line(entry: tuple[ast.For | ast.While, _Step, tuple[ast.AST, ...]]) -> int:
    return entry[0].lineno


def _loops_of(
    step: _Step, finder: _Finder
) -> list[tuple[ast.For | ast.While, tuple[ast.AST, ...]]]:
    """The innermost loop holding the step, with the functions around that loop; or, for a
    step in a function run in no loop of its own, the loops that call that function."""
    if step.loops:
        loop = step.loops[-1]
        return [(loop, finder.around[id(loop)])]
    owner = next((f for f in reversed(step.functions) if isinstance(f, _FUNCTIONS)), None)
    if not isinstance(owner, _FUNCTIONS):
        return []
    callers = [loops[-1] for callee, _, loops in finder.calls if callee == owner.name and loops]
    return [(loop, finder.around[id(loop)]) for loop in callers]


def _check_runs_plainly(
    loop: ast.For | ast.While, functions: tuple[ast.AST, ...], name: str
) -> None:
    """A loop in a generator, an async function or a lambda is not run as a script's loop."""
    for function in functions:
        if isinstance(function, (ast.AsyncFunctionDef, ast.Lambda)):
            raise NoTrainingLoop(
                f"the training loop of {name} (line {loop.lineno}) runs in an async function "
                "or a lambda: not supported"
            )
        if _yields(function):
            raise NoTrainingLoop(
                f"the training loop of {name} (line {loop.lineno}) runs in a generator "
                f"({getattr(function, 'name', '?')}): not supported"
            )


def _yields(function: ast.AST) -> bool:
    """Whether ``function`` is a generator: a yield in its own body, not in a function or class
    defined inside it."""
    todo = list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, (*_FUNCTIONS, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return False
