"""msft_overflow: the recorder of ``ms_fmk_transplt kit overflow`` (the porting guide's operator
overflow detection, 单算子溢出检测): the first operator whose output holds inf or nan while its
inputs are finite, with its call site in the project and the training step it ran in.

Copied next to the training script with msft_kit.py, which loads it (``overflow_begin``); the
tool itself never imports it. At run time it needs the standard library and torch only: every
operator of the steps checked goes through a ``TorchDispatchMode`` (forward, backward and the
optimizer's update alike: what autograd and the optimizer run is dispatched too), which checks
the floating-point tensors each one returns. An operator fed inf or nan (a ``-inf`` attention
mask, data holding nan) is not an overflow: the first one to make them out of finite values is.
Operators whose output is uninitialised memory (``empty``) are not checked.

What it writes, into the folder msft_kit gives it (MSFT_OVERFLOW_DIR, default ``overflow``):
``overflow.json`` (``found``; the operator, its dtype and shape, what it produced, the step, the
call site ``file``/``line``/``code`` relative to MSFT_OVERFLOW_ROOT and the project's frames of
the stack) and one line on stderr.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import traceback
from collections.abc import Iterator
from typing import Any

RESULT = "overflow.json"
_RUNTIME = ("msft_kit.py", "msft_overflow.py")
# operators whose output is memory nobody wrote yet (it may hold anything)
_UNINITIALISED = ("empty", "new_empty", "empty_like", "empty_strided", "new_empty_strided")


def _leaves(value: Any) -> Iterator[Any]:
    """The tensors and numbers in ``value`` (lists, tuples and dicts opened)."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    else:
        yield value


def _name(func: Any) -> str:
    """``mul.Tensor`` for ``aten.mul.Tensor``."""
    return str(getattr(func, "__name__", func))


class Recorder:
    """Checks each operator's outputs, from ``start()`` until the first overflow or ``steps``
    steps; ``root``: the project (its frames make the call site)."""

    def __init__(self, folder: str, steps: int, root: str) -> None:
        self.folder, self.steps, self.root = folder, steps, os.path.join(root, "")
        self.step = 0
        self.found: dict[str, Any] | None = None
        self.mode: Any = None
        self.torch: Any = None

    def start(self) -> None:
        self.torch = importlib.import_module("torch")
        dispatch = importlib.import_module("torch.utils._python_dispatch")
        base: Any = dispatch.TorchDispatchMode
        recorder = self

        class _Mode(base):  # type: ignore[misc]
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                out = func(*args, **(kwargs or {}))
                recorder.check(func, out, (args, kwargs))
                return out

        self.mode = _Mode()
        self.mode.__enter__()

    def _finite(self, value: Any) -> bool:
        torch = self.torch
        if isinstance(value, torch.Tensor):
            if not (value.is_floating_point() or value.is_complex()) or value.numel() == 0:
                return True
            if value.is_meta or value.layout != torch.strided:
                return True
            return bool(torch.isfinite(value).all())
        if isinstance(value, float):
            return math.isfinite(value)
        return True

    def check(self, func: Any, out: Any, inputs: Any) -> None:
        """An operator's outputs: the first holding inf or nan out of finite inputs is kept."""
        if self.found is not None or _name(func).startswith(_UNINITIALISED):
            return
        bad = next((t for t in _leaves(out) if not self._finite(t)), None)
        if bad is not None and all(self._finite(v) for v in _leaves(inputs)):
            self.found = self._record(func, bad)

    def _what(self, tensor: Any) -> str:
        torch = self.torch
        kinds = [("nan", bool(torch.isnan(tensor).any())), ("inf", bool(torch.isinf(tensor).any()))]
        return " and ".join(name for name, found in kinds if found)

    def _record(self, func: Any, tensor: Any) -> dict[str, Any]:
        frames = [f for f in traceback.extract_stack() if self._ours(f.filename)]
        site = frames[-1] if frames else None
        found = {
            "found": True,
            "op": f"aten.{_name(func)}",
            "produced": self._what(tensor),
            "dtype": str(tensor.dtype).replace("torch.", ""),
            "shape": list(tensor.shape),
            "step": self.step,
            "file": self._rel(site.filename) if site else "",
            "line": site.lineno if site else 0,
            "code": (site.line or "") if site else "",
            "stack": [f"{self._rel(f.filename)}:{f.lineno} {f.name}" for f in frames],
        }
        self._write(found)
        return found

    def _ours(self, path: str) -> bool:
        """A frame of the project's code (not the kit's runtime)."""
        path = os.path.abspath(path)
        return path.startswith(self.root) and os.path.basename(path) not in _RUNTIME

    def _rel(self, path: str) -> str:
        return os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/")

    def _write(self, data: dict[str, Any]) -> None:
        with open(os.path.join(self.folder, RESULT), "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
            out.write("\n")

    def tick(self, index: int) -> bool:
        """Step ``index`` is about to start; True when the recording is done (an overflow was
        found in an earlier step, or ``steps`` steps ran)."""
        self.step = index
        return self.found is not None or index >= self.steps

    def stop(self, steps_run: int) -> str:
        """Stops checking; the line that says what was found."""
        if self.mode is not None:
            self.mode.__exit__(None, None, None)
            self.mode = None
        found, path = self.found, os.path.join(self.folder, RESULT)
        if found is None:
            self._write({"found": False, "steps": steps_run})
            return f"overflow: none in {steps_run} step(s); {path}"
        where = f"{found['file']}:{found['line']}" if found["file"] else "outside the project"
        return (
            f"overflow: step {found['step']}: {found['op']} at {where} gives "
            f"{found['produced']} ({found['dtype']} {found['shape']}); {path}"
        )
