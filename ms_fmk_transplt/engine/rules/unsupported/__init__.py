"""unsupported.*: what is left for the NPU, one open-work row per API (rows of
unsupported_op.xlsx / .csv by category)."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.family_spec import LIBRARIES, UNSUPPORTED, Family
from ms_fmk_transplt.engine.rules.unsupported.launch_folds import fold_launch_rows
from ms_fmk_transplt.engine.rules.unsupported.launch_values import finish
from ms_fmk_transplt.engine.rules.unsupported.unsupported_rows import fold, open_work_rule
from ms_fmk_transplt.engine.rules.unsupported.unsupported_spans import UnsupportedSpans

FAMILY = Family(
    "unsupported",
    "span",
    ("unsupported_rows", "unsupported_spans", "launch_values", "launch_folds"),
    (UNSUPPORTED, LIBRARIES),
    (UnsupportedSpans,),
    finish=finish,
    fold=fold,
    run_fold=fold_launch_rows,
    open_work_rule=open_work_rule,
)
