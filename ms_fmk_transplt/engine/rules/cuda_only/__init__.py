"""cuda_only.*: code that only runs on a CUDA device (guards, dispatch keys, skip decorators):
kept, guarded or reported."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.cuda_only.cuda_only_spans import CudaOnlySpans, fold
from ms_fmk_transplt.engine.rules.cuda_only.dispatch_key_spans import DispatchKeySpans
from ms_fmk_transplt.engine.rules.cuda_only.skip_guards_spans import SkipGuardSpans
from ms_fmk_transplt.engine.rules.family_spec import LIBRARIES, UNSUPPORTED, Family

FAMILY = Family(
    "cuda_only",
    "span",
    (
        "cuda_only_spans",
        "dispatch_key_spans",
        "skip_guards_spans",
        "cuda_only_code",
        "cuda_only_hints",
        "cuda_predicates",
        "cuda_gates",
    ),
    (UNSUPPORTED, LIBRARIES),
    (CudaOnlySpans, DispatchKeySpans, SkipGuardSpans),
    fold=fold,
)
