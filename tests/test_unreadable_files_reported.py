"""A file CPython refuses (cannot decode, invalid syntax, nested too deep) is copied unchanged
with one parse.* notice saying why, by default and with -s; every other fixture is migrated by
the span pass (none is handed over)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_files import FIXTURES, READABLE, relative, unreadable_rule

from ms_fmk_transplt.engine.migrate import migrate_source
from ms_fmk_transplt.engine.options import DEFAULT_OPTIONS, EngineOptions
from ms_fmk_transplt.events import FileStatus
from ms_fmk_transplt.tables import load_tables

SPECIFY_DEVICE = EngineOptions(specify_device=True)
OPTIONS = {"default": DEFAULT_OPTIONS, "-s": SPECIFY_DEVICE}
_SYNTAX = "cannot parse: invalid Python 3 syntax ("
_PRINT = _SYNTAX + "Missing parentheses in call to 'print'"  # the rest differs by version
_UNICODE = _SYNTAX + "(unicode error) 'unicodeescape' codec can't decode bytes in position {}: "
_COPIED = "; copied unchanged"
# input -> (rule, line, the start of the message, or all of it when it ends with _COPIED)
REPORTS = {
    "projects/legacy_gpu/legacy_eval.py": ("parse.syntax_error", 4, _PRINT),
    "projects/toolkit/toolkit/legacy_py2.py": ("parse.syntax_error", 7, _PRINT),
    "rules/parse.syntax_error/python2.py": ("parse.syntax_error", 3, _PRINT),
    # Python 2's `except E, name:`: invalid Python 3, not newer syntax
    "rules/parse.syntax_error/python2_except.py": ("parse.syntax_error", 5, _SYNTAX),
    # a t-string (Python 3.14): the message names the Python that can read it
    "rules/parse.syntax_error/tstring_newer_python.py": (
        "parse.syntax_error",
        4,
        "cannot parse: needs a newer Python than ",
    ),
    "rules/parse.syntax_error/unknown_unicode_name_distributed.py": (
        "parse.syntax_error",
        9,
        _UNICODE.format("0-20") + "unknown Unicode character name)" + _COPIED,
    ),
    "rules/parse.syntax_error/unknown_unicode_name.py": (
        "parse.syntax_error",
        7,
        _UNICODE.format("0-20") + "unknown Unicode character name)" + _COPIED,
    ),
    "rules/parse.decode_error/latin1_without_cookie.py": (
        "parse.decode_error",
        1,
        "cannot decode: line 1: byte 0xee is not valid utf-8 (no coding cookie: add e.g. "
        "'# -*- coding: latin-1 -*-' as the first line, or save as UTF-8)" + _COPIED,
    ),
    "rules/parse.limit/deep_brackets.py": (
        "parse.limit",
        1,
        "brackets nested deeper than 200 levels (CPython: too many nested parentheses)" + _COPIED,
    ),
}
UNREADABLE_FILES = [p for p in FIXTURES if unreadable_rule(p) is not None]


def test_every_unreadable_input_has_its_report() -> None:
    inputs = {
        relative(p)
        for p in UNREADABLE_FILES
        if not p.name.endswith(".expected.py") and not relative(p).startswith("expected/")
    }
    assert inputs == set(REPORTS)


@pytest.mark.parametrize("mode", OPTIONS)
@pytest.mark.parametrize("case", UNREADABLE_FILES, ids=relative)
def test_unreadable_file_copied_with_one_notice(case: Path, mode: str) -> None:
    source = case.read_bytes()
    result = migrate_source(source, case.name, load_tables(), OPTIONS[mode])
    assert result.status == FileStatus.SKIPPED
    assert result.output == source and result.events == []
    [notice] = result.notices
    assert (notice.rule, notice.category, notice.api) == (
        unreadable_rule(case),
        "skipped_file",
        "(whole file)",
    )
    assert notice.message.endswith(_COPIED)
    expected = REPORTS.get(relative(case))
    if expected is not None:
        rule, line, message = expected
        assert (notice.rule, notice.line) == (rule, line)
        if message.endswith(_COPIED):
            assert notice.message == message
        else:
            assert notice.message.startswith(message)


@pytest.mark.parametrize("mode", OPTIONS)
def test_every_other_fixture_is_migrated_by_the_span_pass(mode: str) -> None:
    tables = load_tables()
    handed_over = {
        relative(p): result.status.name
        for p in READABLE
        for result in [migrate_source(p.read_bytes(), p.name, tables, OPTIONS[mode])]
        if result.libcst_stages or result.status == FileStatus.SKIPPED
    }
    assert handed_over == {}
    assert len(READABLE) > 250
