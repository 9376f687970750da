"""user_rules.*: -r, the user's JSON rules (a LibCST stage before the span pass)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ms_fmk_transplt.engine.rules.family_spec import USER_RULES, Family
from ms_fmk_transplt.engine.word_search import spells

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.base import Concern
    from ms_fmk_transplt.engine.options import EngineOptions
    from ms_fmk_transplt.tables import Tables


def _stage(code: bytes, tables: Tables, options: EngineOptions) -> tuple[type[Concern], ...]:
    """-r, on a file that spells every name some rule acts on."""
    rules = options.user_rules
    if rules is None or not any(spells(code, names) for names in rules.spelled_names()):
        return ()
    from ms_fmk_transplt.engine.rules.user_rules.user_rule_rewrites import UserRulesConcern

    return (UserRulesConcern,)


FAMILY = Family(
    "user_rules", "before", ("user_rule_rewrites",), (USER_RULES,), option="-r", cst_stage=_stage
)
