"""engine.*: what the engine itself reports (a file it failed on, a statement it left as
written)."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.family_spec import UNSUPPORTED, Family

FAMILY = Family("engine", "run", ("engine_errors", "unmodelled"), (UNSUPPORTED,))
