"""distributed.*: nccl onto hccl (backends, init_process_group, collective enums)."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.distributed.distributed_spans import DistributedSpans
from ms_fmk_transplt.engine.rules.family_spec import INTERFACE, Family

FAMILY = Family(
    "distributed",
    "span",
    ("distributed_spans", "backends"),
    (f"{INTERFACE}#distributed",),
    (DistributedSpans,),
)
