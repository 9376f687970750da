"""specify_device.*: -s, the NPU index comes from DEVICE_ID (a span-pass family)."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.family_spec import INTERFACE, Family
from ms_fmk_transplt.engine.rules.specify_device.specify_device_spans import (
    SpecifyDeviceSpans,
    anchor_words,
    finish,
)

FAMILY = Family(
    "specify_device",
    "span",
    ("specify_device_spans", "rank_reads"),
    (f"{INTERFACE}#specify_device",),
    (SpecifyDeviceSpans,),
    option="-s",
    anchor_words=anchor_words,
    finish=finish,
)
