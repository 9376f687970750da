"""advice.*: optional NPU performance and precision work the target version suggests for the
code (rows of advice.csv; data: rules/advice.json)."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.advice.same_item import fold
from ms_fmk_transplt.engine.rules.advice.script_folds import fold_script_advice
from ms_fmk_transplt.engine.rules.family_spec import ADVICE, Family

FAMILY = Family(
    "advice",
    "scan",
    ("advice_rows", "same_item", "training_scripts", "script_folds"),
    (f"{ADVICE}#entries",),
    fold=fold,
    run_fold=fold_script_advice,
)
