"""Shapes of collective-backend strings, shared by both passes (rules distributed.*)."""

from __future__ import annotations

import re
from collections.abc import Mapping

COMPOUND = re.compile(r"^\s*\w+:\w+\s*(,\s*\w+:\w+\s*)*$")  # "cpu:gloo,cuda:nccl"


def compound(body: str, pairs: Mapping[str, str]) -> str | None:
    """The migrated per-device backend string, or None when body is not one to change."""
    if not COMPOUND.match(body):
        return None
    parts = [p.strip() for p in body.split(",")]
    new = [pairs.get(p, p) for p in parts]
    return ",".join(new) if new != parts else None
