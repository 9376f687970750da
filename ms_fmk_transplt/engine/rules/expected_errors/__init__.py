"""expected_errors.*: error messages code expects from CUDA (pytest.raises(match=...))."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.expected_errors.expected_errors_spans import (
    ExpectedErrorsSpans,
)
from ms_fmk_transplt.engine.rules.family_spec import Family

FAMILY = Family("expected_errors", "span", ("expected_errors_spans",), (), (ExpectedErrorsSpans,))
