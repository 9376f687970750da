"""parse.*: files the engine cannot or will not read (decode errors, syntax CPython refuses,
size and depth limits, bidirectional control characters)."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.family_spec import UNSUPPORTED, Family

FAMILY = Family("parse", "gate", ("guards", "parse_errors"), (UNSUPPORTED,))
