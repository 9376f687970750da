"""libraries.*: third-party training libraries (rules/libraries.json): one row per file and
library; a library whose action is in the library itself (``per_run``), one row per run."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.family_spec import LIBRARIES, Family
from ms_fmk_transplt.engine.rules.libraries.library_argument_spans import LibraryArgumentSpans
from ms_fmk_transplt.engine.rules.libraries.library_rows import fold
from ms_fmk_transplt.engine.rules.libraries.library_run_folds import fold_library_runs

FAMILY = Family(
    "libraries",
    "span",
    (
        "library_rows",
        "library_argument_spans",
        "library_configs",
        "type_only_imports",
        "option_choices",
        "library_run_folds",
    ),
    (LIBRARIES,),
    (LibraryArgumentSpans,),
    fold=fold,
    run_fold=fold_library_runs,
)
