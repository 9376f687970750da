"""tensor_methods.*: .cuda() / .is_cuda and the other tensor and module methods onto .npu()."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.family_spec import INTERFACE, Family
from ms_fmk_transplt.engine.rules.tensor_methods.tensor_methods_spans import TensorMethodsSpans

FAMILY = Family(
    "tensor_methods",
    "span",
    ("tensor_methods_spans",),
    (f"{INTERFACE}#tensor_methods",),
    (TensorMethodsSpans,),
)
