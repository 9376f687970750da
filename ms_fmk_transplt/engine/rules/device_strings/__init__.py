"""device_strings.*: device strings and integer devices ("cuda:0", device="cuda", f-strings,
command-line words) onto the NPU."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.device_strings.device_strings_spans import (
    DeviceStringsSpans,
    fold,
)
from ms_fmk_transplt.engine.rules.family_spec import INTERFACE, UNSUPPORTED, Family

FAMILY = Family(
    "device_strings",
    "span",
    (
        "device_strings_spans",
        "command_overrides",
        "device_names",
        "device_parameters",
        "dotted_names",
        "device_labels",
        "device_consumers",
    ),
    (
        f"{INTERFACE}#device_strings",
        f"{INTERFACE}#int_device",
        f"{INTERFACE}#foreign_cuda_roots",
        UNSUPPORTED,
        "rules/device_consumers.json",
    ),
    (DeviceStringsSpans,),
    fold=fold,
)
