"""kit.*: `kit aoe|profile|precision|assess -m MAIN`, the AOE-tuning, profiling,
precision-comparison and assessment variants of a training script (a LibCST stage after the
span pass, on the -m file only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ms_fmk_transplt.engine.rules.family_spec import Family

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.base import Concern
    from ms_fmk_transplt.engine.options import EngineOptions
    from ms_fmk_transplt.tables import Tables


def _stage(code: bytes, tables: Tables, options: EngineOptions) -> tuple[type[Concern], ...]:
    """A kit's calls, on the -m file only (the run sets ``kit`` for it alone)."""
    if not options.kit:
        return ()
    from ms_fmk_transplt.engine.rules.kit.kit_edits import KitEdits

    return (KitEdits,)


FAMILY = Family(
    "kit",
    "after",
    ("kit_edits", "kit_checks", "training_loop", "precision_checks"),
    option="kit",
    cst_stage=_stage,
)
