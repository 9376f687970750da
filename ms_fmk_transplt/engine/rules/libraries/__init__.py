"""libraries.*: third-party training libraries (rules/libraries.json): one row per file and
library."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.family_spec import LIBRARIES, Family
from ms_fmk_transplt.engine.rules.libraries.library_argument_spans import LibraryArgumentSpans
from ms_fmk_transplt.engine.rules.libraries.library_rows import fold

FAMILY = Family(
    "libraries",
    "span",
    (
        "library_rows",
        "library_argument_spans",
        "library_configs",
        "type_only_imports",
        "option_choices",
    ),
    (LIBRARIES,),
    (LibraryArgumentSpans,),
    fold=fold,
)
