"""The training loop of a script (engine/rules/kit/training_loop.py): the innermost loop
holding an optimizer step, functions defined in it counted; refused, with one line, when there
is none, several, or one the kits cannot run as a script's loop. The sources below are written
for these tests in the shapes of public training scripts (an epoch loop calling train(), a
``while True`` with micro-steps, a step in a closure, a step function called from a loop)."""

from __future__ import annotations

import textwrap

import pytest

from ms_fmk_transplt.engine.rules.kit.training_loop import NoTrainingLoop, find_training_loop


def _source(text: str) -> bytes:
    return textwrap.dedent(text).encode()


EPOCHS = _source(
    """
    def train(loader, model, criterion, optimizer):
        model.train()
        for i, (images, target) in enumerate(loader):
            output = model(images)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


    def validate(loader, model, criterion):
        for i, (images, target) in enumerate(loader):
            loss = criterion(model(images), target)


    for epoch in range(10):
        train(loader, model, criterion, optimizer)
        validate(loader, model, criterion)
    """
)

MICRO_STEPS = _source(
    """
    iter_num = 0
    while True:
        if iter_num % 100 == 0:
            evaluate()
        for micro_step in range(accumulation):
            loss = model(X, Y)
            scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        iter_num += 1
        if iter_num > max_iters:
            break
    """
)

CLOSURE = _source(
    """
    def train_one_epoch(model, loader, optimizer, loss_scaler=None):
        for batch_idx, (input, target) in enumerate(loader):
            def _backward(_loss):
                if loss_scaler is not None:
                    loss_scaler(_loss, optimizer, parameters=model.parameters())
                else:
                    _loss.backward()
                    optimizer.step()
            loss = model(input).sum()
            if not need_update:
                continue
            _backward(loss)
    """
)

STEP_FUNCTION = _source(
    """
    def train_step(batch):
        loss = model(batch).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss


    def main():
        for batch in loader:
            print(train_step(batch))
    """
)


@pytest.mark.parametrize(
    ("source", "line", "body", "step", "function"),
    [
        (EPOCHS, 4, 5, "optimizer.step()", "train"),  # not validate's look-alike loop
        (MICRO_STEPS, 3, 4, "scaler.step(optimizer)", None),  # not the micro-step loop
        (CLOSURE, 3, 4, "loss_scaler(..., optimizer, ...)", "train_one_epoch"),
        (STEP_FUNCTION, 11, 12, "opt.step()", "main"),  # the loop calling the step function
    ],
    ids=["epochs", "micro_steps", "closure", "step_function"],
)
def test_the_loop_holding_the_optimizer_step(
    source: bytes, line: int, body: int, step: str, function: str | None
) -> None:
    loop = find_training_loop(source)
    assert (loop.line, loop.body_line, loop.step, loop.function) == (line, body, step, function)
    lines = source.decode().splitlines()
    assert lines[loop.line - 1].lstrip().startswith(("for ", "while "))
    assert lines[loop.body_line - 1][: loop.body_col].strip() == ""  # the body's indentation


def test_the_innermost_of_nested_loops() -> None:
    source = _source(
        """
        for epoch in range(3):
            for x, y in loader:
                optimizer.step()
        """
    )
    assert find_training_loop(source).line == 3


def test_backward_alone_marks_the_loop_when_no_step_is_found() -> None:
    source = _source(
        """
        for x, y in loader:
            loss = model(x, y)
            loss.backward()
            sgd_update(model)
        """
    )
    loop = find_training_loop(source)
    assert (loop.line, loop.step) == (2, "loss.backward()")


@pytest.mark.parametrize(
    ("source", "why"),
    [
        (
            "import lightning as L\ntrainer = L.Trainer(max_epochs=3)\ntrainer.fit(model, data)\n",
            "no training loop found in train.py: no optimizer step",
        ),
        (
            "loss = model(x).sum()\nloss.backward()\noptimizer.step()\n",
            "no training loop found in train.py: optimizer.step() (line 3) runs in no for/while",
        ),
        (
            "for x in a:\n    opt_g.step()\nfor y in b:\n    opt_d.step()\n",
            "several training loops in train.py (lines 1, 3): choose one",
        ),
        (
            "def batches(loader, optimizer):\n    for x in loader:\n        optimizer.step()\n"
            "        yield x\n",
            "the training loop of train.py (line 2) runs in a generator (batches)",
        ),
        (
            "async def run(loader, optimizer):\n    for x in loader:\n        optimizer.step()\n",
            "the training loop of train.py (line 2) runs in an async function or a lambda",
        ),
    ],
    ids=["trainer_fit", "no_loop", "two_loops", "generator", "async"],
)
def test_refused_with_one_line_saying_why(source: str, why: str) -> None:
    with pytest.raises(NoTrainingLoop) as error:
        find_training_loop(source.encode(), "train.py")
    assert str(error.value).startswith(why)
    assert "\n" not in str(error.value)


def test_a_scaler_without_the_optimizer_is_not_a_step() -> None:
    source = _source(
        """
        for x in loader:
            scaler.step()
            grad_scaler(x)
        """
    )
    with pytest.raises(NoTrainingLoop, match="no optimizer step"):
        find_training_loop(source)


def test_a_generator_defined_inside_the_function_does_not_make_it_one() -> None:
    """A yield in a function defined in the training function is that function's, not the
    training function's: its loop is still found."""
    source = _source(
        """
        def train(loader, optimizer):
            def batches():
                for x in loader:
                    yield x

            for x in batches():
                optimizer.step()
        """
    )
    loop = find_training_loop(source, "train.py")
    assert (loop.line, loop.function) == (7, "train")
