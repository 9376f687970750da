"""distributed_mode.*: `distributed -m MAIN -t MODEL`, a single-card script made data-parallel
(a LibCST stage after the span pass)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ms_fmk_transplt.engine.rules.family_spec import INTERFACE, Family

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.base import Concern
    from ms_fmk_transplt.engine.options import EngineOptions
    from ms_fmk_transplt.tables import Tables


def _stage(code: bytes, tables: Tables, options: EngineOptions) -> tuple[type[Concern], ...]:
    """distributed -m, on the -m file only (the run sets distributed_target for it alone);
    the rank-0 guards after DistributedMode: they guard what that one left."""
    if options.distributed_target is None:
        return ()
    from ms_fmk_transplt.engine.rules.distributed_mode.distributed_rewrites import (
        DistributedMode,
    )
    from ms_fmk_transplt.engine.rules.distributed_mode.rank_zero_guards import RankZeroGuards

    return (DistributedMode, RankZeroGuards) if options.rank_guards else (DistributedMode,)


FAMILY = Family(
    "distributed_mode",
    "after",
    (
        "distributed_plan",
        "distributed_rewrites",
        "dataloader_sharding",
        "model_wraps",
        "trained_modules",
        "existing_distributed",
        "rank_zero_guards",
    ),
    (f"{INTERFACE}#distributed_mode",),
    option="distributed -m",
    cst_stage=_stage,
)
