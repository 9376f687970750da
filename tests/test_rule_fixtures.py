"""Golden input/expected pairs, one folder per rule id: fixtures/rules/<rule id>/<case>.py."""

from __future__ import annotations

import functools
from pathlib import Path

import fixture_rows
import pytest
from helpers import assert_events_match_diff, run_case, tables_for

from ms_fmk_transplt.commands.rule_docs import fixture_applies, fixture_expect, fixture_options
from ms_fmk_transplt.engine import migrate_source
from ms_fmk_transplt.engine.rules.advice.same_item import joined_advice
from ms_fmk_transplt.events import FileResult, FileStatus

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "fixtures" / "rules"
CASES = sorted(p for p in RULES.glob("*/*.py") if not p.name.endswith(".expected.py"))


def expected_of(case: Path) -> Path:
    return case.with_name(case.stem + ".expected.py")


def case_id(case: Path) -> str:
    return f"{case.parent.name}/{case.stem}"


@functools.cache
def migrated(case: Path) -> FileResult:
    """The result of a case as the tool gives it (``run_case``: with the fault its sidecar may
    inject), migrated once for all the tests below that read it; none of them modifies it."""
    return run_case(case)


@functools.cache
def engine_result(case: Path) -> FileResult:
    """What ``migrate_source`` itself returns for a case: ``migrated(case)`` unless the case
    injects a fault, which only the pipeline around the engine raises."""
    options, fault = fixture_options(case, ROOT)
    if not fault:
        return migrated(case)
    return migrate_source(case.read_bytes(), case.name, tables_for(case), options)


@pytest.fixture(params=CASES, ids=case_id)
def case(request) -> Path:
    if not fixture_applies(request.param):  # its sidecar's python: another Python's parser
        pytest.skip("the case shows what the parser of another Python says")
    return request.param


def test_there_are_cases() -> None:
    assert len(CASES) >= 40


def test_golden_output(case: Path) -> None:
    result = migrated(case)
    assert result.output == expected_of(case).read_bytes()


def test_rule_of_the_folder_fires(case: Path) -> None:
    rule = case.parent.name
    result = migrated(case)
    fired = {e.rule for e in result.events} | {n.rule for n in result.notices}
    fired |= {rule for n in result.notices for rule in joined_advice(n)}  # part of a row
    expect = fixture_expect(case)  # <case>.options.json says it ("fires" without one)
    if expect == "unchanged":
        assert result.status == FileStatus.UNCHANGED and not fired
    elif expect == "silent":
        assert rule not in fired
    else:
        assert rule in fired


def test_events_describe_the_diff(case: Path) -> None:
    result = engine_result(case)
    assert_events_match_diff(case.read_bytes(), result.output, result.events, where=case_id(case))


def test_idempotent(case: Path) -> None:
    expected = expected_of(case).read_bytes()
    again = run_case(case, expected_of(case))
    assert again.output == expected
    assert again.events == []


def test_rows(case: Path) -> None:
    """Every row of each kind (<case>.unsupported.csv: open work, .advice.csv, .changes.csv,
    .notices.csv; tests/fixture_rows.py), every text field of it -- lines, API, category,
    action, tip, message, caveat, rule, before and after; a case without the file must produce
    no such row: no false entries, in particular for code the engine migrated. An open-work row
    says what to do; an advice row is performance, precision or environment work and says what
    to do too."""
    result = migrated(case)
    for kind, rows in fixture_rows.ROWS.items():
        assert sorted(rows(result)) == sorted(fixture_rows.read(case, kind)), kind
    assert all(n.tip for n in result.notices if n.category)
    assert all(
        n.tip and n.category in ("performance", "precision", "environment")
        for n in result.notices
        if n.advice
    )


def test_before_and_after_show_the_real_source_text() -> None:
    """A chained call wrapped in parentheses over several lines (issue: rendered "….cuda _() )")."""
    case = RULES / "tensor_methods.cuda_call" / "multiline_chain.py"
    shown = [(e.before, e.after) for e in migrated(case).events if e.before]
    assert shown == [
        ("build_model(config).cuda()", "build_model(config).npu()"),
        ("torch.ones(2).cuda()", "torch.ones(2).npu()"),
    ]
