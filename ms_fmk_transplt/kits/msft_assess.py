"""msft_assess: the recorder behind ``msft_kit.assess_begin`` / ``assess_tick`` (kit assess).

Copied into the kit's tree next to msft_kit.py, never imported by the tool; torch is imported
only when recording starts. For steps 0..N-1 of the training loop it records every torch API
call made by any code (the project, its libraries, torch's own Python such as nn.Module and the
optimizers) with the dtypes and shapes of its tensor arguments and results, and every call of a
``torch.cuda`` function; then writes ``ops.csv``, ``cuda_calls.csv`` and ``report.html``.

Why a ``torch.overrides.TorchFunctionMode`` and not a ``TorchDispatchMode``: the function mode is
called at the torch API level our operator tables name (``torch.nn.functional.interpolate``,
``torch.Tensor.add``), from any caller, with the Python call stack still there to find the
project line and the library that reached it, and with the keyword arguments as given; the
dispatch mode sees aten operators (``aten::upsample_nearest2d``) below autograd, without the
caller, names the tables do not use. Calls made inside a call being recorded (the aten ops of
``F.interpolate``) are not seen: the mode is off while its own handler runs.

``torch.cuda`` functions are not torch functions the mode sees; the public functions of the
``torch.cuda`` module are wrapped while recording (patching costs nothing for the other calls;
``sys.setprofile`` would run a hook on every Python call and return of the whole program). A
name bound before recording (``from torch.cuda import is_available``) is not seen.
``torch.from_numpy``, which bypasses the mode, is wrapped the same way. A torch function called
in another thread is not seen (the mode is per thread; the wrapped functions are seen from any
thread), nor anything a DataLoader worker process runs.

The modules the operator tables name (``torch.nn.LSTM``: its ``dropout`` restricted) are recorded
too, their class's ``forward`` wrapped (not a global hook: every other module keeps its fast
path), with the constructor arguments that differ from the class's
defaults as their keyword arguments (the function the module calls, ``torch.lstm``, has its own
row). The recording pauses when the training loop ends (``loop_end``: msft_kit.assess_end, right
after the loop) and resumes at its next iteration: an evaluation after the loop is not a step.

``Where`` names the project's lines as the input project numbers them: msft_ops.json's
``inserted`` lists the kit's own lines per file, which are taken off.

Skipped: property reads of tensors (``x.shape``, ``x.dtype``, ``x.grad``: the mode sees them as
``getset_descriptor.__get__``/``__set__``) and torch's private calls (a name starting with one
underscore, ``torch._C._set_grad_enabled``, the profiler's ``torch._ops`` hooks; but the
operators ``torch._foreach_add_`` and the like, which the optimizers run, are kept).
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import importlib
import importlib.util
import inspect
import json
import os
import sys
import sysconfig
from types import FrameType
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
_OWN = {os.path.abspath(__file__), os.path.join(_HERE, "msft_kit.py")}
_LIBS = ("site-packages", "dist-packages")
_SHOWN_SITES = 8  # call sites kept per torch.cuda function
_KEPT_SHAPES = 64  # distinct shapes kept per API and step
_SHAPE_CHARS = 300  # the longest shape text kept (a torch.cat of a thousand tensors)
_PREFIXES = {  # the C modules behind torch's public namespaces: (module, name prefix dropped)
    "torch._C._nn": ("torch.nn.functional", ""),
    "torch._C._linalg": ("torch.linalg", "linalg_"),
    "torch._C._fft": ("torch.fft", "fft_"),
    "torch._C._special": ("torch.special", "special_"),
    "torch._C._VariableFunctions": ("torch", ""),
    "torch.functional": ("torch", ""),
    "torch._tensor": ("torch.Tensor", ""),
}


def api_name(func: Any) -> str | None:
    """The torch-level name of what the mode was called with, as the operator tables name it
    (``torch.sum``, ``torch.Tensor.add``, ``torch.nn.functional.interpolate``); None: skipped."""
    name = getattr(func, "__name__", "") or ""
    qual = getattr(func, "__qualname__", name) or name
    module = getattr(func, "__module__", None) or ""
    if name in ("__get__", "__set__", "__delete__") or module.startswith("torch._ops"):
        return None
    owner = qual.rsplit(".", 1)[0] if "." in qual else ""
    if name.startswith("_") and not name.startswith("__") and owner != "_VariableFunctionsClass":
        return None  # private; torch._foreach_add_ and the like are kept: kernels that run
    if owner in ("TensorBase", "Tensor") or getattr(func, "__objclass__", None) is not None:
        return f"torch.Tensor.{name}"
    if owner == "_VariableFunctionsClass":
        return f"torch.{name}"
    if module in _PREFIXES:
        public, drop = _PREFIXES[module]
        return f"{public}.{name[len(drop) :] if drop and name.startswith(drop) else name}"
    if "<locals>" in qual:  # F.max_pool2d is boolean_dispatch's inner fn, named max_pool2d
        return f"{module}.{name}" if module else name
    return f"{module}.{qual}" if module else qual


def _tensors(value: Any, tensor: type, out: list[Any], depth: int = 0) -> None:
    """The tensors in ``value``, through lists, tuples and dicts (three levels deep)."""
    if isinstance(value, tensor):
        out.append(value)
    elif depth < 3 and isinstance(value, (list, tuple)):
        for item in value:
            _tensors(item, tensor, out, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for item in value.values():
            _tensors(item, tensor, out, depth + 1)


def _one_shape(tensor: Any) -> str:
    try:
        return str(tuple(tensor.shape))
    except Exception:  # a nested tensor has no single shape
        return "(nested)"


def _shape(tensors: list[Any]) -> str:
    """The shapes, runs of the same one counted (``(3, 1) x1039``), at most _SHAPE_CHARS."""
    runs: list[list[Any]] = []
    for text in map(_one_shape, tensors):
        if runs and runs[-1][0] == text:
            runs[-1][1] += 1
        else:
            runs.append([text, 1])
    shown = ", ".join(text if count == 1 else f"{text} x{count}" for text, count in runs)
    return shown if len(shown) <= _SHAPE_CHARS else shown[: _SHAPE_CHARS - 3] + "..."


def _dtype(tensor: Any) -> str:
    try:
        return str(tensor.dtype).replace("torch.", "")
    except Exception:
        return "unknown"


def _first_defaults(funcs: Any) -> dict[str, Any]:
    """The parameter defaults of ``funcs``, the first to name a parameter winning."""
    found: dict[str, Any] = {}
    for func in funcs:
        try:
            params = inspect.signature(func).parameters.values()
        except (TypeError, ValueError):
            continue
        for param in params:
            if param.default is not inspect.Parameter.empty:
                found.setdefault(param.name, param.default)
    return found


@functools.cache
def _defaults(func: Any) -> dict[str, Any] | None:
    """The defaults of ``func``'s parameters; for a function that takes ``*args, **kwargs``
    and calls one it holds (F.max_pool2d is boolean_dispatch's ``fn``), those of the ones it
    holds (``dilation=1`` given by nn.MaxPool2d is the default, not an argument)."""
    found = _first_defaults([func])
    if not found:
        held = (c.cell_contents for c in getattr(func, "__closure__", None) or ())
        found = _first_defaults([f for f in held if callable(f)])
    return found or None


def _given(func: Any, kwargs: dict[str, Any]) -> list[str]:
    """The keyword arguments given: not None and not the function's default (a Python function
    such as F.interpolate passes all its parameters on to the mode as keywords)."""
    try:
        defaults = _defaults(func) or {}
    except TypeError:  # unhashable
        defaults = {}
    names = []
    for key, value in kwargs.items():
        if value is None or key.startswith("_"):
            continue  # _stacklevel and the like
        default = defaults.get(key, inspect.Parameter.empty)
        plain = isinstance(value, (bool, int, float, str)) and type(value) is type(default)
        if not (value is default or (plain and value == default)):
            names.append(key)
    return names


def _report_module() -> Any:
    """msft_assess_report.py, next to this file."""
    name = "msft_assess_report"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, f"{name}.py"))
        if spec is None or spec.loader is None:
            raise SystemExit(f"msft_kit: {name}.py is missing next to {_HERE}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _inserted(path: str) -> dict[str, list[int]]:
    """msft_ops.json's ``inserted``: absolute path -> the kit's own lines in that file."""
    try:
        with open(path, encoding="utf-8") as fh:
            inserted = json.load(fh).get("inserted") or {}
        return {
            os.path.normpath(os.path.join(os.path.dirname(path), str(rel))): sorted(map(int, lines))
            for rel, lines in inserted.items()
        }
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


class Recorder:
    """Records steps 0..steps-1 into ``folder``; ``root``: the project's folder."""

    def __init__(self, folder: str, steps: int, root: str, table: str) -> None:
        self.folder, self.steps, self.table = folder, steps, table
        self.root = os.path.join(os.path.abspath(root), "")
        self.step = -1  # until tick 0: the loop's header and its first batch
        self.apis: dict[str, Any] = {}  # API -> msft_assess_report.Api
        self.cuda: dict[str, tuple[list[int], dict[str, None]]] = {}
        self.mode: Any = None
        self.patched: dict[str, tuple[Any, str, Any]] = {}  # name -> (owner, attribute, original)
        self.summary = ""
        self.torch_dir = ""
        self.stdlib = ""
        self.tensor_type: type = type(None)
        self.report = _report_module()
        self.support = self.report.table(table)
        self.modules = {k for k in self.support or {} if k.rsplit(".", 1)[-1][:1].isupper()}
        self.inserted = _inserted(table)
        self.paused = False
        self.names: dict[Any, str | None] = {}  # what the mode was called with -> its API
        self.ticks = 0  # the steps begun
        self.loop_ends = 0  # how often the loop ended while recording

    # -- where a call comes from ------------------------------------------------------------
    def where(self) -> str:
        """The innermost frame outside torch that is in the project, as ``file:line``, plus the
        library (the top package of the outermost library frame between it and torch: in a
        site-packages folder, or any module outside the project and the standard library)."""
        frame: FrameType | None = sys._getframe(1)
        library = ""
        while frame is not None:
            path = frame.f_code.co_filename
            path = path if path.startswith("<") else os.path.abspath(path)
            if path in _OWN or path.startswith("<") or path.startswith(self.torch_dir):
                frame = frame.f_back
                continue
            parts = path.replace("\\", "/").split("/")
            hit = [i for i, part in enumerate(parts) if part in _LIBS]
            if hit and hit[-1] + 1 < len(parts):
                library = parts[hit[-1] + 1].split(".")[0]
            elif path.startswith(self.root):
                number = frame.f_lineno
                own = self.inserted.get(path)
                if own:  # the kit's lines taken off: the input's numbering
                    number -= bisect.bisect_left(own, number)
                line = f"{os.path.relpath(path, self.root)}:{number}"
                return f"{line} ({library})" if library else line
            elif not path.startswith(self.stdlib):  # on sys.path another way (editable, a path)
                module = str(frame.f_globals.get("__name__") or "")
                if module and module != "__main__":
                    library = module.split(".")[0]
            frame = frame.f_back
        return f"({library})" if library else ""

    # -- recording ---------------------------------------------------------------------------
    def record(self, func: Any, args: Any, kwargs: dict[str, Any], result: Any) -> None:
        try:
            name = self.names[func]
        except (KeyError, TypeError):  # (TypeError: an unhashable callable, never cached)
            name = api_name(func)
            with contextlib.suppress(TypeError):
                self.names[func] = name
        if name is not None:
            self._add(name, args, kwargs, result, _given(func, kwargs))

    def _wrap_forward(self, name: str, forward: Any) -> Any:
        """The forward of a module class the tables name (``torch.nn.LSTM``), recording each
        call with the module's constructor arguments that differ from the class's defaults as
        its keyword arguments (a subclass's call through ``super().forward`` too)."""

        @functools.wraps(forward)
        def wrapper(module: Any, *args: Any, **kwargs: Any) -> Any:
            result = forward(module, *args, **kwargs)
            with contextlib.suppress(Exception):  # never break the user's run
                self._add(name, args, kwargs, result, _settings(module))
            return result

        return wrapper

    def _add(
        self, name: str, args: Any, kwargs: dict[str, Any], result: Any, given: list[str]
    ) -> None:
        api = self.apis.get(name)
        if api is None:
            api = self.apis[name] = self.report.Api(name)
            api.where = self.where()  # (once: "" when no project line reaches it)
        api.calls += 1
        tensor = self.tensor_type
        inputs: list[Any] = []
        _tensors((args, kwargs), tensor, inputs)
        api.dtypes.update(_dtype(t) for t in inputs)
        api.keywords.update(given)
        shapes = api.steps.setdefault(self.step, set())
        if len(shapes) < _KEPT_SHAPES:  # (no text made for a shape that would not be kept)
            outputs: list[Any] = []
            _tensors(result, tensor, outputs)
            shapes.add(_shape(inputs) + (f" -> {_shape(outputs)}" if outputs else ""))

    def cuda_call(self, name: str) -> None:
        counts, sites = self.cuda.setdefault(name, ([0], {}))
        counts[0] += 1
        if len(sites) < _SHOWN_SITES:
            sites[self.where()] = None

    def _wrap(self, name: str, func: Any) -> Any:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.cuda_call(f"torch.cuda.{name}")
            return func(*args, **kwargs)

        return wrapper

    def _wrap_op(self, name: str, func: Any) -> Any:
        """A torch function the mode does not see (``torch.from_numpy``), recorded as one."""

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = func(*args, **kwargs)
            with contextlib.suppress(Exception):
                self._add(name, args, kwargs, result, [])
            return result

        return wrapper

    def start(self) -> None:
        torch = importlib.import_module("torch")
        overrides = importlib.import_module("torch.overrides")
        self.tensor_type = torch.Tensor
        self.torch_dir = os.path.join(os.path.dirname(os.path.abspath(str(torch.__file__))), "")
        self.stdlib = os.path.join(os.path.abspath(sysconfig.get_paths()["stdlib"]), "")
        recorder = self
        base: Any = overrides.TorchFunctionMode

        class _Mode(base):  # type: ignore[misc]
            def __torch_function__(
                self, func: Any, types: Any, args: Any = (), kwargs: Any = None
            ) -> Any:
                kwargs = kwargs or {}
                result = func(*args, **kwargs)
                with contextlib.suppress(Exception):  # never break the user's run
                    recorder.record(func, args, kwargs, result)
                return result

        self.mode = _Mode()
        self._resume()

    def _resume(self) -> None:
        """Recording on: the mode entered, the torch.cuda functions, torch.from_numpy and the
        forward of the module classes the tables name wrapped."""
        torch = importlib.import_module("torch")
        for name, value in list(vars(torch.cuda).items()):
            if not name.startswith("_") and inspect.isfunction(value):
                if (getattr(value, "__module__", "") or "").startswith("torch.cuda"):
                    self.patched[f"torch.cuda.{name}"] = (torch.cuda, name, value)
                    setattr(torch.cuda, name, self._wrap(name, value))
        numpy = torch.from_numpy
        self.patched["torch.from_numpy"] = (torch, "from_numpy", numpy)
        setattr(torch, "from_numpy", self._wrap_op("torch.from_numpy", numpy))  # noqa: B010
        for name in sorted(self.modules):  # the forward of each class the tables name
            cls = getattr(torch.nn, name.rsplit(".", 1)[-1], None)
            forward = vars(cls).get("forward") if isinstance(cls, type) else None
            if name.count(".") == 2 and forward is not None:
                self.patched[f"{name}.forward"] = (cls, "forward", forward)
                setattr(cls, "forward", self._wrap_forward(name, forward))  # noqa: B010
        self.mode.__enter__()
        self.paused = False

    def _pause(self) -> None:
        """Recording off (the wrapped functions restored), until ``_resume``."""
        if self.paused or self.mode is None:
            return
        self.mode.__exit__(None, None, None)
        for owner, attribute, original in self.patched.values():
            setattr(owner, attribute, original)
        self.patched.clear()
        self.paused = True

    def loop_end(self) -> None:
        """The training loop ended before the last step: the recording pauses."""
        if self.mode is not None and not self.paused:
            self.loop_ends += 1
            self._pause()

    def tick(self, index: int) -> bool:
        """Tick ``index`` (the loop body's first statement): step index-1 has finished. True
        when all the steps are recorded."""
        if index >= self.steps:
            return True
        if self.paused and self.mode is not None:
            self._resume()  # the loop's next pass (the next epoch)
        self.step, self.ticks = index, index + 1
        return False

    def stop(self, ended: bool = False) -> str:
        """Recording off, the reports written; the summary line. ``ended``: the run ends before
        the last step (at exit)."""
        if self.mode is not None:
            self._pause()
            self.mode = None
            steps = f"{self.ticks} step{'s' if self.ticks != 1 else ''}"
            early = ""
            if ended and self.ticks < self.steps:
                how = "the loop ended" if self.loop_ends else "the run ended"
                early = f"{how} before step {self.ticks} of the {self.steps} asked"
            self.summary = self.report.write(
                self.folder, self.apis, self.cuda, self.support, steps, early
            )
        return self.summary


def _settings(module: Any) -> list[str]:
    """The constructor arguments of a module that differ from its class's defaults (read back
    from the attributes of the same name: ``dropout``, ``proj_size``); the defaults from the
    first ``__init__`` up the class's bases that names them (nn.LSTM's takes ``*args``)."""
    inits = [vars(klass).get("__init__") for klass in type(module).__mro__]
    defaults = _first_defaults([init for init in inits if init is not None])
    names = []
    for name, default in defaults.items():
        value = getattr(module, name, default)
        if isinstance(value, (bool, int, float, str)) and value != default:
            names.append(name)
    return sorted(names)
