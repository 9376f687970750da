"""TEST DOUBLE of torch_npu: runs migrated NPU code on the CPU (never shipped to users).

What it provides, mirroring how the real torch_npu 2.x presents itself:

* ``torch.npu`` (also ``torch_npu.npu``, importable as ``torch.npu`` / ``torch.npu.amp``) with the
  names migrated code calls: is_available, device_count, set_device, current_device, synchronize,
  device, Stream/stream/current_stream/default_stream, Event (real CPU timing), memory statistics,
  RNG seeding and state, typed tensor constructors, amp.autocast / amp.GradScaler, the HF32
  switches ``conv.allow_hf32`` / ``matmul.allow_hf32`` (flags; nothing reads them).
* The ``npu`` device type: the PrivateUse1 backend is renamed to "npu" exactly as torch_npu does,
  so ``torch.device("npu:0")`` is a real device object; a global TorchFunctionMode then maps every
  npu device argument (strings, devices) to the CPU at the call boundary, so factories, ``.to``,
  ``Module.to``, ``map_location`` and autocast ``device_type`` all land on the CPU.
  ``Tensor.npu()``/``Module.npu()`` and ``Tensor.is_npu`` exist (every CPU tensor counts as "on the
  NPU" here). ``device_count()`` is 1, or ``STANDIN_NPU_COUNT`` when a test sets it (a script that
  spawns one worker per NPU); ``set_device``/``current_device`` keep the index each process chose.
* ``torch_npu.profiler`` (profiler.py: torch_npu 2.x's signatures, traces left where the real one
  leaves them, misuse raised) and ``torch.npu.set_aoe`` (aoe.py), each call recorded
  (``MSFT_STANDIN_LOG``), for the kits' executed tests.
* A fault switch for the precision kit's test, off by default: ``MSFT_STANDIN_SKEW=linear``
  makes ``F.linear`` return a wrong result (skew.py), the "perturbed NPU".
* ``hccl`` process groups: a real backend named hccl, registered like torch_npu registers its own,
  implemented by gloo, so multi-process runs work on one CPU machine; DDP accepts ``device_ids``
  for the stand-in device.

What it deliberately does not do: anything CUDA. On the CPU build of PyTorch, ``.cuda()``,
``device="cuda"``, bare integer devices (read as CUDA ordinals), ``torch.cuda.set_device``,
``torch.cuda.synchronize`` and the ``nccl`` backend fail exactly as on an NPU-only host, and
``torch.cuda.is_available()`` is False. That is what lets the tests catch incomplete migrations.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import os
import re
import sys
import time
import types

import torch
import torch.distributed as dist
from torch.overrides import TorchFunctionMode

__version__ = "0.0.0+cpu-standin"
IS_STANDIN = True

_NPU_STRING = re.compile(r"^npu(:\d+)?$")
_CPU = torch.device("cpu")

torch.utils.rename_privateuse1_backend("npu")


class _Hooks(torch._C._acc.PrivateUse1Hooks):
    """What torch asks a registered backend (accelerator detection, barrier, DataLoader)."""

    def is_available(self) -> bool:
        return True

    def has_primary_context(self, dev_id) -> bool:
        return True

    def is_built(self) -> bool:
        return True


class _Guard(torch._C._acc.DeviceGuard):
    def type_(self):
        return torch._C._autograd.DeviceType.PrivateUse1


torch._C._acc.register_python_privateuseone_hook(_Hooks())
torch._C._acc.register_python_privateuseone_device_guard(_Guard())


def _is_npu(value: object) -> bool:
    if isinstance(value, torch.device):
        return value.type == "npu"
    return isinstance(value, str) and bool(_NPU_STRING.match(value))


def _to_cpu(value: object) -> object:
    if _is_npu(value):
        return _CPU if isinstance(value, torch.device) else "cpu"
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    return value


class _NpuOnCpu(TorchFunctionMode):
    """Maps npu device arguments of every torch function / Tensor method to the CPU."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.device:  # keep real npu device objects: device.type == "npu"
            return func(*args, **kwargs)
        if getattr(func, "__name__", "") == "pin_memory":  # host memory is device memory here
            return args[0]
        args = tuple(_to_cpu(a) for a in args)
        if "device" in kwargs:
            kwargs["device"] = _to_cpu(kwargs["device"])
        return func(*args, **kwargs)


# -- the torch.npu module ---------------------------------------------------------------------
npu = types.ModuleType("torch_npu.npu", "torch.npu of the CPU stand-in")
_state = {"device": 0}


def is_available() -> bool:
    return True


def device_count() -> int:
    """1, or STANDIN_NPU_COUNT (a test asking for several "NPUs", all of them the CPU)."""
    return int(os.environ.get("STANDIN_NPU_COUNT", "1"))


def _index(device: object) -> int:
    if isinstance(device, torch.device):
        return device.index or 0
    if isinstance(device, str):
        return int(device.split(":")[1]) if ":" in device else 0
    return int(device or 0)


def set_device(device: object) -> None:
    if isinstance(device, str) and not _is_npu(device):
        raise RuntimeError(f"set_device: invalid NPU device {device!r}")
    _state["device"] = _index(device)


def current_device() -> int:
    return _state["device"]


def synchronize(device: object = None) -> None:
    return None


class device:  # noqa: N801 - mirrors torch.npu.device
    def __init__(self, device: object) -> None:
        self.idx = _index(device)

    def __enter__(self):
        self.prev, _state["device"] = _state["device"], self.idx
        return self

    def __exit__(self, *exc) -> None:
        _state["device"] = self.prev


class Stream:
    def __init__(self, device: object = None, priority: int = 0) -> None:
        self.device = torch.device("npu", _index(device))

    def wait_stream(self, stream: Stream) -> None:
        return None

    def wait_event(self, event: Event) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def query(self) -> bool:
        return True

    def record_event(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event


_DEFAULT_STREAM = Stream()
_current = {"stream": _DEFAULT_STREAM}


def current_stream(device: object = None) -> Stream:
    return _current["stream"]


def default_stream(device: object = None) -> Stream:
    return _DEFAULT_STREAM


@contextlib.contextmanager
def stream(s: Stream | None):
    prev = _current["stream"]
    _current["stream"] = s or prev
    try:
        yield s
    finally:
        _current["stream"] = prev


class Event:
    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> None:
        self.enable_timing = enable_timing
        self.time: float | None = None

    def record(self, stream: Stream | None = None) -> None:
        self.time = time.perf_counter()

    def synchronize(self) -> None:
        return None

    def wait(self, stream: Stream | None = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: Event) -> float:
        if not (self.enable_timing and self.time is not None and end.time is not None):
            raise RuntimeError("Both events must be recorded with enable_timing=True")
        return (end.time - self.time) * 1000.0


_memory = {"peak": 0}


def memory_allocated(device: object = None) -> int:
    return 0


def max_memory_allocated(device: object = None) -> int:
    return _memory["peak"]


def memory_reserved(device: object = None) -> int:
    return 0


def max_memory_reserved(device: object = None) -> int:
    return 0


def reset_peak_memory_stats(device: object = None) -> None:
    _memory["peak"] = 0


def reset_max_memory_allocated(device: object = None) -> None:
    _memory["peak"] = 0


def empty_cache() -> None:
    return None


def memory_stats(device: object = None) -> dict:
    return {"allocated_bytes.all.current": 0, "allocated_bytes.all.peak": _memory["peak"]}


def memory_summary(device: object = None, abbreviated: bool = False) -> str:
    return "NPU stand-in (CPU): no device memory"


def mem_get_info(device: object = None) -> tuple[int, int]:
    return (32 << 30, 32 << 30)


def get_device_name(device: object = None) -> str:
    return "Ascend stand-in (CPU)"


def get_device_properties(device: object = None):
    return types.SimpleNamespace(
        name=get_device_name(), total_memory=32 << 30, multi_processor_count=1, major=0, minor=0
    )


def get_device_capability(device: object = None) -> tuple[int, int]:
    return (0, 0)


def is_bf16_supported() -> bool:
    return True


# The "NPU" generator is the CPU's. Not torch.manual_seed: that calls the device module's
# manual_seed_all (below, once _is_in_bad_fork exists), which would call it again.
def manual_seed(seed: int) -> None:
    torch.default_generator.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    torch.default_generator.manual_seed(seed)


def _is_in_bad_fork() -> bool:
    """torch.manual_seed seeds a device module having this and manual_seed_all (else it warns
    that the npu seed does not take effect)."""
    return False


def seed() -> None:
    torch.seed()


def seed_all() -> None:
    torch.seed()


def initial_seed() -> int:
    return torch.initial_seed()


def get_rng_state(device: object = None) -> torch.Tensor:
    return torch.get_rng_state()


def set_rng_state(state: torch.Tensor, device: object = None) -> None:
    torch.set_rng_state(state)


def get_rng_state_all() -> list[torch.Tensor]:
    return [torch.get_rng_state()]


def set_rng_state_all(states) -> None:
    torch.set_rng_state(states[0])


def is_initialized() -> bool:
    return True


def init() -> None:
    return None


for _name in (
    "Bool",
    "Byte",
    "Char",
    "Double",
    "Float",
    "Half",
    "Int",
    "Long",
    "Short",
    "BFloat16",
):
    setattr(npu, f"{_name}Tensor", getattr(torch, f"{_name}Tensor"))


# -- torch.npu.amp -----------------------------------------------------------------------------
class autocast(torch.amp.autocast_mode.autocast):  # noqa: N801 - torch.autocast on the stand-in
    def __init__(
        self, device_type: str = "npu", dtype=None, enabled: bool = True, cache_enabled=None
    ) -> None:
        if _is_npu(device_type):
            device_type = "cpu"
            dtype = dtype or torch.bfloat16  # what the CPU autocast supports everywhere
        super().__init__(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    def __init__(self, device: str = "npu", *args, **kwargs) -> None:
        super().__init__("cpu" if _is_npu(device) else device, *args, **kwargs)


class _NpuAmpAutocast(autocast):
    """torch.npu.amp.autocast(...) == torch.autocast("npu", ...)."""

    def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True) -> None:
        super().__init__("npu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class _NpuAmpGradScaler(GradScaler):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__("npu", *args, **kwargs)


amp = types.ModuleType("torch_npu.npu.amp", "torch.npu.amp of the CPU stand-in")
amp.autocast = _NpuAmpAutocast
amp.GradScaler = _NpuAmpGradScaler
amp.custom_fwd = torch.amp.custom_fwd
amp.custom_bwd = torch.amp.custom_bwd

for _name, _value in list(globals().items()):
    if _name.startswith("_") or _name in (
        "npu",
        "amp",
        "annotations",
        "contextlib",
        "re",
        "sys",
        "time",
        "types",
        "torch",
        "dist",
        "TorchFunctionMode",
    ):
        continue
    if callable(_value):
        setattr(npu, _name, _value)
npu.amp = amp
npu._is_in_bad_fork = _is_in_bad_fork
npu.autocast = autocast  # not public in torch_npu; used by the patched torch.autocast below
# the HF32 switches (torch_npu's npu_config: conv defaults to True, matmul to False); plain flags
npu.conv = types.SimpleNamespace(allow_hf32=True)
npu.matmul = types.SimpleNamespace(allow_hf32=False)

# Register the module the way torch_npu does: torch.npu is torch_npu.npu.
torch._register_device_module("npu", npu)
sys.modules["torch_npu.npu"] = npu
sys.modules["torch_npu.npu.amp"] = amp
sys.modules["torch.npu.amp"] = amp

# torch.autocast / torch.amp.autocast / torch.amp.GradScaler with device "npu" land on the CPU.
torch.autocast = autocast
torch.amp.autocast = autocast
torch.amp.GradScaler = GradScaler
torch.GradScaler = GradScaler


# -- Tensor / Module additions ----------------------------------------------------------------
def _tensor_npu(self, device=None, non_blocking: bool = False, **kwargs):
    if device is not None and not _is_npu(device) and not isinstance(device, int):
        raise RuntimeError(f"Tensor.npu(): invalid NPU device {device!r}")
    return self


def _module_npu(self, device=None):
    return self


torch.Tensor.npu = _tensor_npu
torch.Tensor.is_npu = property(lambda self: self.device.type == "cpu")
torch.nn.Module.npu = _module_npu

_load = torch.load


def _load_on_cpu(*args, **kwargs):
    if "map_location" in kwargs:
        kwargs["map_location"] = _to_cpu(kwargs["map_location"])
    return _load(*args, **kwargs)


torch.load = _load_on_cpu


# -- hccl: a real backend named "hccl", implemented by gloo -----------------------------------
# Exit: torch_npu's atexit hook synchronizes the device before the interpreter goes
# (_npu_shutdown). The stand-in needs the same for gloo: DDP keeps its process group alive past
# destroy_process_group, so the gloo worker thread lives on, and it drops its last reference to
# a finished collective when it gets round to it -- possibly while the interpreter is
# finalizing. If that work held a tensor whose Python object PyTorch preserved, the release
# takes the GIL, CPython ends the thread inside a noexcept destructor, and the process aborts
# ("terminate called without an active exception": gdb shows runLoop -> ~AsyncBarrierWork ->
# ~AsyncAllreduceWork -> TensorImpl::decref_pyobject -> take_gil -> pthread_exit). It happens to
# the unmigrated script on plain CPU/gloo as well. So each hccl backend runs ONE worker thread,
# which executes works in order, and at exit every rank runs one more allreduce and waits until
# the worker has released it: every earlier work has then been released too, with the
# interpreter alive.
_HCCL_BACKENDS: list = []
_DRAIN_TIMEOUT_S = 60.0


def _create_hccl(store, rank, size, timeout):
    options = dist.ProcessGroupGloo._Options()
    options._timeout = timeout
    options._devices = [dist.ProcessGroupGloo.create_default_device()]
    options._threads = 1
    backend = dist.ProcessGroupGloo(store, rank, size, options)
    _HCCL_BACKENDS.append(backend)
    return backend


def _drain(backend) -> None:
    token = torch.zeros(1)
    weak = token.untyped_storage()._weak_ref()
    try:
        work = backend.allreduce([token])
        work.wait(datetime.timedelta(seconds=_DRAIN_TIMEOUT_S))
        del work, token  # from here the worker holds the last reference
        deadline = time.monotonic() + _DRAIN_TIMEOUT_S
        while not torch.UntypedStorage._expired(weak) and time.monotonic() < deadline:
            time.sleep(0.001)  # the GIL is free meanwhile: the worker may need it
    finally:
        torch.UntypedStorage._free_weak_ref(weak)


def _drain_hccl_at_exit() -> None:
    for backend in _HCCL_BACKENDS:
        try:
            _drain(backend)
        except Exception:  # noqa: BLE001 - a peer already gone: nothing left to wait for
            pass
    _HCCL_BACKENDS.clear()


atexit.register(_drain_hccl_at_exit)


if "hccl" not in dist.Backend.backend_list:
    dist.Backend.register_backend("hccl", _create_hccl, devices=["cpu", "npu"])

_ddp_init = torch.nn.parallel.DistributedDataParallel.__init__


def _ddp_init_npu(self, module, device_ids=None, output_device=None, *args, **kwargs):
    # On the stand-in the "NPU" is the CPU, where DDP takes no device_ids.
    if device_ids is not None and all(isinstance(d, int) or _is_npu(d) for d in device_ids):
        device_ids, output_device = None, None
    _ddp_init(self, module, device_ids, output_device, *args, **kwargs)


torch.nn.parallel.DistributedDataParallel.__init__ = _ddp_init_npu

_MODE = _NpuOnCpu()
_MODE.__enter__()  # active for the life of the process

import torch_npu.optim  # noqa: E402,F401 - `import torch_npu` loads it, as the real package does
import torch_npu.profiler  # noqa: E402,F401 - and its profiler
from torch_npu.aoe import set_aoe  # noqa: E402
from torch_npu.skew import apply_from_environment  # noqa: E402

apply_from_environment()  # MSFT_STANDIN_SKEW: the "perturbed NPU" (skew.py); off by default

npu.set_aoe = set_aoe  # torch.npu.set_aoe / torch_npu.npu.set_aoe
