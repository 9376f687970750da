"""todo.*: `# msft: TODO[...]` comments on lines a structural option could not finish."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.family_spec import Family

FAMILY = Family("todo", "after", ("todo_comments",))
