"""deps.*: with ``--deps``, the project's calls of an installed library's APIs that reach
CUDA-specific code inside the library (run/library_analysis.py analyses the libraries; the
library is never copied or changed): one row per file and library, naming the APIs and the
path down to the library's line; a library the table knows keeps its own row, which gains
the path."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.deps.deps_spans import DepsSpans, deps_words, fold
from ms_fmk_transplt.engine.rules.family_spec import DEPS, Family

FAMILY = Family(
    "deps",
    "span",
    ("deps_spans",),
    (DEPS,),
    (DepsSpans,),
    option="--deps",
    anchor_words=deps_words,
    fold=fold,
)
