"""Cheap byte-level test run before any CST work: a file that cannot contain anything the rules
act on or report is copied without parsing. Conservative: a false positive only costs a parse."""

from __future__ import annotations

import re
from functools import lru_cache

from ms_fmk_transplt.engine.options import EngineOptions
from ms_fmk_transplt.tables import Tables

BASE_TRIGGERS = (
    b"cuda",
    b"nccl",
    b"NCCL",
    b"cudnn",
    b"DataParallel",
    b"data_parallel",
    b"ops.",
    b"cpp_extension",
    b"CUDA",
    b"CUBLAS",
)


@lru_cache(maxsize=8)
def triggers(tables: Tables) -> tuple[bytes, ...]:
    # integer device indices (x.to(local_rank)) need no "cuda" anywhere in the file
    names = {n.encode() for n in tables.int_device.identifiers | tables.int_device.sequences}
    return BASE_TRIGGERS + tuple(sorted(names))


@lru_cache(maxsize=8)
def library_roots(tables: Tables) -> re.Pattern[bytes]:
    """The listed libraries' top-level names as whole words (a short root like ``fla`` must not
    fire on ``flatten``)."""
    roots = sorted({m.split(".")[0] for m in tables.unsupported.modules})
    return re.compile(rb"\b(?:" + b"|".join(re.escape(r.encode()) for r in roots) + rb")\b")


def may_need_migration(source: bytes, tables: Tables, options: EngineOptions) -> bool:
    if any(token in source for token in triggers(tables)):
        return True
    if library_roots(tables).search(source):
        return True
    rules = options.user_rules
    return rules is not None and any(name.encode() in source for name in rules.names())
