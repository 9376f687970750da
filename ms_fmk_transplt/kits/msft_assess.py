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

Skipped: property reads of tensors (``x.shape``, ``x.dtype``, ``x.grad``: the mode sees them as
``getset_descriptor.__get__``/``__set__``) and torch's private calls (a name starting with one
underscore, ``torch._C._set_grad_enabled``, the profiler's ``torch._ops`` hooks; but the
operators ``torch._foreach_add_`` and the like, which the optimizers run, are kept).
"""

from __future__ import annotations

import contextlib
import csv
import functools
import html
import importlib
import inspect
import json
import os
import sys
from types import FrameType
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
_OWN = {os.path.abspath(__file__), os.path.join(_HERE, "msft_kit.py")}
_LIBS = ("site-packages", "dist-packages")
_SHOWN_SHAPES = 8  # distinct shapes shown per API in ops.csv
_KEPT_SHAPES = 64  # distinct shapes kept per API and step
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


class _Api:
    """What was recorded for one API."""

    def __init__(self) -> None:
        self.calls = 0
        self.dtypes: set[str] = set()
        self.keywords: set[str] = set()
        self.steps: dict[int, set[str]] = {}
        self.where = ""

    def shapes(self) -> list[str]:
        return list(dict.fromkeys(s for k in sorted(self.steps) for s in sorted(self.steps[k])))

    def dynamic(self) -> bool:
        """The set of shapes differs between steps. Step 0 is a warm-up (lazy modules, cached
        masks, optimizer state) compared only when fewer than two later steps called the API;
        the calls before step 0 (the loop's header, its first batch: step -1) never are."""
        later = [shapes for step, shapes in self.steps.items() if step >= 1]
        steps = later if len(later) >= 2 else [s for k, s in self.steps.items() if k >= 0]
        return len({frozenset(shapes) for shapes in steps}) > 1


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


def _shape(tensors: list[Any]) -> str:
    return ", ".join(str(tuple(t.shape)) for t in tensors)


def _dtype(tensor: Any) -> str:
    return str(tensor.dtype).replace("torch.", "")


@functools.cache
def _defaults(func: Any) -> dict[str, Any] | None:
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return None
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


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


class Recorder:
    """Records steps 0..steps-1 into ``folder``; ``root``: the project's folder."""

    def __init__(self, folder: str, steps: int, root: str, table: str) -> None:
        self.folder, self.steps, self.table = folder, steps, table
        self.root = os.path.join(os.path.abspath(root), "")
        self.step = -1  # until tick 0: the loop's header and its first batch
        self.apis: dict[str, _Api] = {}
        self.cuda: dict[str, tuple[list[int], dict[str, None]]] = {}
        self.mode: Any = None
        self.patched: dict[str, Any] = {}
        self.summary = ""
        self.torch_dir = ""
        self.tensor_type: type = type(None)

    # -- where a call comes from ------------------------------------------------------------
    def where(self) -> str:
        """The innermost frame outside torch that is in the project, as ``file:line``, plus the
        library (the top package of the outermost site-packages frame between it and torch)."""
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
                line = f"{os.path.relpath(path, self.root)}:{frame.f_lineno}"
                return f"{line} ({library})" if library else line
            frame = frame.f_back
        return f"({library})" if library else ""

    # -- recording ---------------------------------------------------------------------------
    def record(self, func: Any, args: Any, kwargs: dict[str, Any], result: Any) -> None:
        name = api_name(func)
        if name is None:
            return
        api = self.apis.get(name)
        if api is None:
            api = self.apis[name] = _Api()
        api.calls += 1
        tensor = self.tensor_type
        inputs: list[Any] = []
        _tensors((args, kwargs), tensor, inputs)
        outputs: list[Any] = []
        _tensors(result, tensor, outputs)
        api.dtypes.update(_dtype(t) for t in inputs)
        api.keywords.update(_given(func, kwargs))
        shape = _shape(inputs) + (f" -> {_shape(outputs)}" if outputs else "")
        shapes = api.steps.setdefault(self.step, set())
        if len(shapes) < _KEPT_SHAPES:
            shapes.add(shape)
        if not api.where:
            api.where = self.where()

    def cuda_call(self, name: str) -> None:
        counts, sites = self.cuda.setdefault(name, ([0], {}))
        counts[0] += 1
        if len(sites) < _SHOWN_SHAPES:
            sites[self.where()] = None

    def _wrap(self, name: str, func: Any) -> Any:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.cuda_call(f"torch.cuda.{name}")
            return func(*args, **kwargs)

        return wrapper

    def start(self) -> None:
        torch = importlib.import_module("torch")
        overrides = importlib.import_module("torch.overrides")
        self.tensor_type = torch.Tensor
        self.torch_dir = os.path.join(os.path.dirname(os.path.abspath(str(torch.__file__))), "")
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

        for name, value in list(vars(torch.cuda).items()):
            if not name.startswith("_") and inspect.isfunction(value):
                if (getattr(value, "__module__", "") or "").startswith("torch.cuda"):
                    self.patched[name] = value
                    setattr(torch.cuda, name, self._wrap(name, value))
        self.mode = _Mode()
        self.mode.__enter__()

    def tick(self, index: int) -> bool:
        """Tick ``index`` (the loop body's first statement): step index-1 has finished. True
        when all the steps are recorded."""
        if index >= self.steps:
            return True
        self.step = index
        return False

    def stop(self, steps: int) -> str:
        """Recording off, the reports written for ``steps`` steps; the summary line."""
        if self.mode is not None:
            self.mode.__exit__(None, None, None)
            self.mode = None
            cuda = importlib.import_module("torch.cuda")
            for name, value in self.patched.items():
                setattr(cuda, name, value)
            self.summary = _write(self, steps)
        return self.summary


# -- the reports -----------------------------------------------------------------------------
def _table(path: str) -> dict[str, Any] | None:
    """msft_ops.json's "apis" (written by ``kit assess`` for the target version); None: absent."""
    try:
        with open(path, encoding="utf-8") as fh:
            apis = json.load(fh).get("apis")
    except (OSError, ValueError, AttributeError):
        return None
    return apis if isinstance(apis, dict) else None


def _kind(dtype: str) -> str:
    for kind in ("complex", "float", "bool", "int"):
        if kind in dtype:
            return kind
    return dtype


def npu_verdict(api: _Api, entry: Any) -> str:
    """The NPU column: the table's status; for a restricted API whether the recorded dtypes or
    keyword arguments hit the restriction (only dtypes of a kind the table lists count: an
    int64 index does not hit a float16/float32 list). msft_ops.json lists the APIs the target
    version documents as unsupported or restricted: any other is supported."""
    if not isinstance(entry, dict):
        return "supported"
    status = str(entry.get("status", "unknown"))
    if status != "restricted":
        return status
    hits = [key for key in entry.get("arguments") or {} if key in api.keywords]
    allowed = entry.get("dtypes")
    if allowed:
        kinds = {_kind(d) for d in allowed}
        hits += [f"dtype {d}" for d in sorted(api.dtypes) if d not in allowed and _kind(d) in kinds]
    text = f"restricted (hit: {', '.join(hits)})" if hits else "restricted (not hit)"
    restriction = str(entry.get("restriction") or "")
    return f"{text}: {restriction}" if restriction else text


def _shapes_cell(api: _Api) -> str:
    shapes = api.shapes()
    more = len(shapes) - _SHOWN_SHAPES
    cell = "; ".join(f"[{shape}]" for shape in shapes[:_SHOWN_SHAPES])
    return f"{cell}; ... (+{more} more)" if more > 0 else cell


def _rows(rec: Recorder) -> list[dict[str, str]]:
    table = _table(rec.table)
    order = sorted(rec.apis.items(), key=lambda kv: (not kv[1].dynamic(), -kv[1].calls, kv[0]))
    return [
        {
            "API": name,
            "Calls": str(api.calls),
            "Dtypes": ", ".join(sorted(api.dtypes)),
            "Shapes": _shapes_cell(api),
            "Dynamic": "yes" if api.dynamic() else "no",
            "NPU": "unknown" if table is None else npu_verdict(api, table.get(name)),
            "Where": api.where,
        }
        for name, api in order
    ]


def _csv(path: str, fields: list[str], rows: list[dict[str, str]]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def _html_table(fields: list[str], rows: list[dict[str, str]]) -> str:
    head = "".join(f"<th>{html.escape(f)}</th>" for f in fields)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(row[f])}</td>" for f in fields) + "</tr>\n"
        for row in rows
    )
    return f"<table>\n<tr>{head}</tr>\n{body}</table>\n"


def _per_step(api: _Api) -> list[tuple[int, str]]:
    return [(step, "; ".join(sorted(api.steps[step]))) for step in sorted(api.steps)]


def _html(rec: Recorder, rows: list[dict[str, str]], steps: int, cuda: list[dict[str, str]]) -> str:
    fields = ["API", "Calls", "Dtypes", "Shapes", "Dynamic", "NPU", "Where"]
    dynamic = [
        {
            "API": row["API"],
            "NPU": row["NPU"],
            "Step": str(step) if step >= 0 else "before 0",
            "Shapes": shapes,
        }
        for row in rows
        if row["Dynamic"] == "yes"
        for step, shapes in _per_step(rec.apis[row["API"]])
    ]
    flagged = [
        r for r in rows if r["NPU"] == "unsupported" or r["NPU"].startswith("restricted (hit")
    ]
    rest = [r for r in rows if r["Dynamic"] == "no" and r not in flagged]
    parts = [
        ("Dynamic shapes (per step)", _html_table(["API", "NPU", "Step", "Shapes"], dynamic)),
        ("Unsupported, or restricted and hit, on the NPU", _html_table(fields, flagged)),
        ("The other APIs", _html_table(fields, rest)),
        ("torch.cuda calls", _html_table(["API", "Calls", "Where"], cuda)),
    ]
    style = "table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 6px}"
    body = "".join(f"<h2>{html.escape(title)}</h2>\n{table}" for title, table in parts)
    title = html.escape(f"kit assess: {len(rows)} APIs in {steps} steps")
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{style}</style></head>\n<body><h1>{title}</h1>\n{body}</body></html>\n"
    )


def _write(rec: Recorder, steps: int) -> str:
    rows = _rows(rec)
    cuda = [
        {"API": name, "Calls": str(counts[0]), "Where": "; ".join(sites)}
        for name, (counts, sites) in sorted(rec.cuda.items(), key=lambda kv: (-kv[1][0][0], kv[0]))
    ]
    fields = ["API", "Calls", "Dtypes", "Shapes", "Dynamic", "NPU", "Where"]
    _csv(os.path.join(rec.folder, "ops.csv"), fields, rows)
    _csv(os.path.join(rec.folder, "cuda_calls.csv"), ["API", "Calls", "Where"], cuda)
    with open(os.path.join(rec.folder, "report.html"), "w", encoding="utf-8") as fh:
        fh.write(_html(rec, rows, steps, cuda))
    dynamic = sum(r["Dynamic"] == "yes" for r in rows)
    unsupported = sum(r["NPU"] == "unsupported" for r in rows)
    hit = sum(r["NPU"].startswith("restricted (hit") for r in rows)
    shown = os.path.relpath(os.path.join(rec.folder, "ops.csv"))
    if shown.startswith(".."):
        shown = os.path.join(rec.folder, "ops.csv")
    return (
        f"assess: {len(rows)} APIs in {steps} steps ({dynamic} with dynamic shapes, "
        f"{unsupported} unsupported, {hit} restricted and hit on the NPU): {shown}"
    )
