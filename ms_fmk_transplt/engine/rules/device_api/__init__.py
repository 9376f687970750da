"""device_api.*: the torch.cuda namespace onto torch.npu (the interface table), capability
probes, and torch.cuda names the target's torch.npu lacks."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.device_api.capability_spans import RULE, CapabilitySpans
from ms_fmk_transplt.engine.rules.device_api.device_api_spans import DeviceApiSpans, Hf32Switches
from ms_fmk_transplt.engine.rules.device_api.no_counterpart import fold_per_api
from ms_fmk_transplt.engine.rules.family_spec import (
    ADVICE,
    INTERFACE,
    UNSUPPORTED,
    Family,
    Folding,
)
from ms_fmk_transplt.events import Notice


def fold(notices: list[Notice], done: Folding) -> list[Notice]:
    """One row per file, API and action of no_npu_counterpart and capability_probe."""
    return fold_per_api(notices, done, RULE)


FAMILY = Family(
    "device_api",
    "span",
    ("device_api_spans", "capability_spans", "no_counterpart", "probe_shapes", "cuda_chains"),
    (f"{INTERFACE}#cuda_namespace", "rules/torch_npu_names", UNSUPPORTED, f"{ADVICE}#entries"),
    (CapabilitySpans, DeviceApiSpans, Hf32Switches),
    fold=fold,
)
