"""optout.*: `# msft: skip-file` and `# msft: ignore[...]` comments."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.family_spec import Family

FAMILY = Family("optout", "gate", ("optout_comments",))
