"""environment.*: CUDA/NCCL environment variables with an exact Ascend counterpart."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.environment.environment_spans import EnvironmentSpans
from ms_fmk_transplt.engine.rules.family_spec import ADVICE, Family

FAMILY = Family(
    "environment",
    "span",
    ("environment_keys", "environment_spans"),
    (f"{ADVICE}#environment",),
    (EnvironmentSpans,),
)
