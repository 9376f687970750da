"""assess.*: with ``--assessed``, what a run of ``kit assess`` saw the training steps run
(unsupported and hit restricted APIs, shapes that change between steps) as rows at the project
lines that reached it, judged for the migration's target version."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.assess.assess_rows import finish, fold
from ms_fmk_transplt.engine.rules.family_spec import Family

FAMILY = Family(
    "assess",
    "span",
    ("assess_rows",),
    ("rules/operator_support",),
    option="--assessed",
    finish=finish,
    fold=fold,
)
