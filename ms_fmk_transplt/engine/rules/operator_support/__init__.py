"""operator_support.*: what the target torch_npu version's API-support list says of the code."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.family_spec import Family
from ms_fmk_transplt.engine.rules.operator_support.operator_rows import fold

FAMILY = Family(
    "operator_support", "scan", ("operator_rows",), ("rules/operator_support",), fold=fold
)
