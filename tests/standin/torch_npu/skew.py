"""TEST DOUBLE's fault switch: the "perturbed NPU" of the precision kit's executed test.

``MSFT_STANDIN_SKEW=linear`` (read once, when ``import torch_npu`` loads this) makes
``torch.nn.functional.linear`` -- which ``nn.Linear`` calls -- compute with the weight doubled
and 0.1 added to the bias: the same operator, by the same name, with a wrong result, as a
faulty NPU kernel would give. ``msprobe compare`` of its dump with the CPU ("GPU") one reports
``error`` rows (an extra operator instead would only show as an unmatched row). Unset or empty,
nothing changes; an unknown value raises ValueError. Recorded as ``standin.skew``
(``MSFT_STANDIN_LOG``).
"""

from __future__ import annotations

import os

import torch.nn.functional as F  # noqa: N812 - torch's own spelling
from msft_tf_standin import record

SKEWS = ("linear",)
_exact_linear = F.linear


def _skewed_linear(input, weight, bias=None):  # noqa: A002 - F.linear's own parameter names
    # skewed inside the one call: the output is wrong (msprobe compare: the forward output's
    # NormRelativeErr > 0.5, "error") while its autograd node stays the exact linear's, so the
    # backward rows keep their shapes (``out * 2`` after the call would change them)
    return _exact_linear(input, weight * 2.0, None if bias is None else bias + 0.1)


def apply_from_environment() -> str:
    """The skew named by MSFT_STANDIN_SKEW, put in place ("" when none)."""
    name = os.environ.get("MSFT_STANDIN_SKEW", "")
    if not name:
        return ""
    if name not in SKEWS:
        raise ValueError(f"MSFT_STANDIN_SKEW={name!r}: the stand-in knows {', '.join(SKEWS)}")
    F.linear = _skewed_linear
    record("standin.skew", op=name)
    return name
