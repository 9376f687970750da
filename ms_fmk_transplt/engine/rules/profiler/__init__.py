"""profiler.*: the CUDA profiler switches (use_cuda=, ProfilerActivity.CUDA) onto the NPU's."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.family_spec import INTERFACE, Family
from ms_fmk_transplt.engine.rules.profiler.profiler_spans import ProfilerSpans

FAMILY = Family(
    "profiler", "span", ("profiler_spans",), (f"{INTERFACE}#profiler",), (ProfilerSpans,)
)
