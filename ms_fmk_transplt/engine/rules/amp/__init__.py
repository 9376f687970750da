"""amp.*: automatic mixed precision (autocast, GradScaler) onto torch.npu.amp / device "npu"."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.amp.amp_spans import AmpSpans
from ms_fmk_transplt.engine.rules.family_spec import INTERFACE, Family

FAMILY = Family("amp", "span", ("amp_spans",), (f"{INTERFACE}#amp",), (AmpSpans,))
