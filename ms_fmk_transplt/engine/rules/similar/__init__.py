"""similar.*: -sim, APIs with no NPU implementation replaced by similar ones (a LibCST stage
after the span pass)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ms_fmk_transplt.engine.rules.family_spec import SIMILAR, Family
from ms_fmk_transplt.engine.word_search import spells

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.base import Concern
    from ms_fmk_transplt.engine.options import EngineOptions
    from ms_fmk_transplt.tables import Tables


def _stage(code: bytes, tables: Tables, options: EngineOptions) -> tuple[type[Concern], ...]:
    """-sim, on a file that spells every name of one of its APIs."""
    if not options.similar or not any(spells(code, api.split(".")) for api in tables.similar):
        return ()
    from ms_fmk_transplt.engine.rules.similar.similar_calls import Similar

    return (Similar,)


FAMILY = Family(
    "similar",
    "after",
    ("similar_calls",),
    (f"{SIMILAR}#entries",),
    option="-sim",
    cst_stage=_stage,
)
