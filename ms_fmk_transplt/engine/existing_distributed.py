"""Whether MAIN already went through ``distributed -m`` (its helpers are there): nothing is added
again (a second run changes nothing)."""

from __future__ import annotations

import libcst as cst


def is_converted(module: cst.Module) -> bool:
    """Whether an earlier ``distributed -m`` run converted this file (its helpers are there)."""
    return any(
        isinstance(s, cst.FunctionDef) and s.name.value == "msft_init_distributed"
        for s in module.body
    )
