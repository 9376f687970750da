"""TEST DOUBLE of torch_npu.profiler (loaded by ``import torch_npu``): the Ascend PyTorch
Profiler's public names with torch_npu 2.x's signatures, so that code written for the real one
(the profile kit of issue 33) runs on the CPU, leaves what the real one leaves on disk, and
fails where the real one would.

* ``profile(*, activities, schedule, on_trace_ready, record_shapes, profile_memory, with_stack,
  with_flops, with_modules, experimental_config)``: keyword-only; a context manager or
  ``start()`` / ``step()`` / ``stop()``. ``step()`` before ``start()`` or after ``stop()``, a
  second ``start()``, a ``stop()`` without ``start()`` raise RuntimeError (the real one warns on
  some: a test wants to know).
* ``schedule(wait, active, warmup=0, repeat=0, skip_first=0)``: torch_npu's positional order,
  which is not torch.profiler.schedule's (wait, warmup, active): code must pass keywords.
* ``tensorboard_trace_handler(dir_name, worker_name)``: when an active cycle ends, writes
  ``<dir>/<worker>_<ms>_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json`` (the steps recorded),
  as the real one writes its parsed results there.
* ``ProfilerActivity``, ``ProfilerLevel``, ``AiCMetrics``, ``_ExperimentalConfig`` (its keywords
  checked).

Every call is recorded (msft_tf_standin.record: ``MSFT_STANDIN_LOG=<file>`` appends JSON lines).
"""

from __future__ import annotations

import enum
import json
import os
import socket
import time
from collections.abc import Callable
from typing import Any

from msft_tf_standin import record


class ProfilerActivity(enum.Enum):
    CPU = "CPU"
    NPU = "NPU"


class ProfilerLevel:
    Level0 = "Level0"
    Level1 = "Level1"
    Level2 = "Level2"


class AiCMetrics:
    AiCoreNone = "AiCoreNone"
    PipeUtilization = "PipeUtilization"
    ArithmeticUtilization = "ArithmeticUtilization"
    Memory = "Memory"
    MemoryL0 = "MemoryL0"
    MemoryUB = "MemoryUB"
    ResourceConflictRatio = "ResourceConflictRatio"
    L2Cache = "L2Cache"


class _ExperimentalConfig:
    def __init__(
        self,
        profiler_level: str = ProfilerLevel.Level0,
        aic_metrics: str = AiCMetrics.AiCoreNone,
        l2_cache: bool = False,
        data_simplification: bool = True,
        record_op_args: bool = False,
    ) -> None:
        if profiler_level not in (ProfilerLevel.Level0, ProfilerLevel.Level1, ProfilerLevel.Level2):
            raise ValueError(f"profiler_level: {profiler_level!r}")
        self.profiler_level, self.aic_metrics = profiler_level, aic_metrics
        self.l2_cache, self.data_simplification = l2_cache, data_simplification
        self.record_op_args = record_op_args


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(
    wait: int, active: int, warmup: int = 0, repeat: int = 0, skip_first: int = 0
) -> Callable[[int], ProfilerAction]:
    """torch_npu's order: (wait, active, warmup, repeat, skip_first)."""
    for name, value in (("wait", wait), ("active", active), ("warmup", warmup)):
        if not isinstance(value, int) or value < 0:
            raise ValueError(f"schedule: {name} must be an int >= 0, not {value!r}")
    if active < 1:
        raise ValueError("schedule: active must be >= 1")
    record("profiler.schedule", wait=wait, active=active, warmup=warmup, repeat=repeat,
           skip_first=skip_first)  # fmt: skip
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if repeat and step // cycle >= repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD_AND_SAVE if at == cycle - 1 else ProfilerAction.RECORD

    return action


def tensorboard_trace_handler(
    dir_name: str | None = None, worker_name: str | None = None
) -> Callable[[profile], None]:
    folder = os.path.abspath(dir_name or "./")
    worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
    record("profiler.tensorboard_trace_handler", dir_name=folder, worker_name=worker)

    def handler(prof: profile) -> None:
        run = os.path.join(folder, f"{worker}_{int(time.time() * 1000)}_ascend_pt")
        output = os.path.join(run, "ASCEND_PROFILER_OUTPUT")
        os.makedirs(output, exist_ok=True)
        with open(os.path.join(output, "trace_view.json"), "w", encoding="utf-8") as out:
            json.dump({"steps": prof.saved_steps, "activities": prof.activities}, out)
        record("profiler.trace_ready", folder=run, steps=prof.saved_steps)

    return handler


class profile:  # noqa: N801 (torch_npu's name)
    def __init__(
        self,
        *,
        activities: list[ProfilerActivity] | None = None,
        schedule: Callable[[int], ProfilerAction] | None = None,
        on_trace_ready: Callable[[profile], None] | None = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        with_modules: bool = False,
        experimental_config: _ExperimentalConfig | None = None,
    ) -> None:
        chosen = activities or [ProfilerActivity.CPU, ProfilerActivity.NPU]
        if not all(isinstance(a, ProfilerActivity) for a in chosen):
            raise TypeError(f"activities: not ProfilerActivity values: {chosen!r}")
        if experimental_config is not None and not isinstance(
            experimental_config, _ExperimentalConfig
        ):
            raise TypeError("experimental_config: not an _ExperimentalConfig")
        self.activities = [a.value for a in chosen]
        self.schedule = schedule or (lambda step: ProfilerAction.RECORD)
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current = ProfilerAction.NONE
        self.pending: list[int] = []  # steps of the cycle being recorded
        self.recorded: list[int] = []  # steps of the cycles saved
        self.saved_steps: list[int] = []  # those of the last one
        self.state = "new"
        record("profiler.profile", activities=self.activities, record_shapes=record_shapes,
               profile_memory=profile_memory, with_stack=with_stack)  # fmt: skip

    def start(self) -> None:
        if self.state != "new":
            raise RuntimeError(f"profile.start(): the profiler is {self.state}")
        self.state = "started"
        record("profiler.start")
        self._enter_step()

    def step(self) -> None:
        """The step that ran ends: a cycle whose last active step it was is saved."""
        if self.state != "started":
            raise RuntimeError(f"profile.step(): the profiler is {self.state}")
        if self.current == ProfilerAction.RECORD_AND_SAVE:
            self._save()
        self.step_num += 1
        record("profiler.step", step=self.step_num)
        self._enter_step()

    def stop(self) -> None:
        """As torch's: a cycle being recorded is saved."""
        if self.state != "started":
            raise RuntimeError(f"profile.stop(): the profiler is {self.state}")
        self.state = "stopped"
        if self.pending:
            self._save()
        record("profiler.stop", recorded=self.recorded)

    def _enter_step(self) -> None:
        self.current = self.schedule(self.step_num)
        if self.current in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self.pending.append(self.step_num)

    def _save(self) -> None:
        self.recorded.extend(self.pending)
        steps, self.pending = self.pending, []
        if self.on_trace_ready is not None:
            self.saved_steps = steps
            self.on_trace_ready(self)

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
