"""Every rule id is declared once in code, has its page docs/rules/<id>.md (generated, up to
date) and its golden fixtures fixtures/rules/<id>/; data names only declared ids; what a fixture
run records is declared, and of the declared kind."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import run_case, tables_for, tool

from ms_fmk_transplt.catalogue.rule_catalog import ADVICE, CHANGE, OPEN_WORK, declare
from ms_fmk_transplt.commands.rule_docs import all_rules, fixture_cases, index_page, render_page
from ms_fmk_transplt.tables import load_tables

ROOT = Path(__file__).resolve().parent.parent
RULES = all_rules()
PAGES = ROOT / "docs" / "rules"
FIXTURES = ROOT / "fixtures" / "rules"


def test_every_rule_has_a_page_and_a_fixture_and_nothing_else_does() -> None:
    assert len(RULES) >= 60
    assert {p.name for p in FIXTURES.iterdir() if p.is_dir()} == set(RULES)
    assert {p.stem for p in PAGES.glob("*.md")} == set(RULES) | {"README"}
    for rule_id in RULES:
        cases = fixture_cases(FIXTURES, rule_id)
        assert cases and all(c.with_name(c.stem + ".expected.py").is_file() for c in cases)


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_page_is_up_to_date(rule_id: str) -> None:
    page = (PAGES / f"{rule_id}.md").read_text(encoding="utf-8")
    assert page == render_page(RULES[rule_id], ROOT), "run python scripts/build_rule_docs.py"
    assert "## Example" in page  # taken from the golden pair


def test_index_is_up_to_date() -> None:
    assert (PAGES / "README.md").read_text(encoding="utf-8") == index_page(RULES)


def test_each_id_is_written_once_in_the_code() -> None:
    """The declaration is the only place an id is spelled; everything else uses its constant."""
    sources = "\n".join(
        p.read_text(encoding="utf-8") for p in (ROOT / "ms_fmk_transplt").rglob("*.py")
    )
    for rule_id in RULES:
        literal = re.compile(r"[\"']" + re.escape(rule_id) + r"[\"']")
        assert len(literal.findall(sources)) == 1, rule_id


def test_data_names_only_declared_ids() -> None:
    tables = load_tables()
    named = {row.rule for row in tables.rows} | {tables.raw["cuda_namespace"]["fallback_rule"]}
    named |= {e["rule"] for e in tables.similar.values()}
    assert named <= set(RULES)
    advice = {r for r, rule in RULES.items() if rule.kind == ADVICE}
    assert set(tables.advice.by_id) == advice
    own = {"version_gap", "unsupported_op", "restricted_op", "skipped_file", "failed_file"}
    own |= {"incomplete_migration", "capability_probe", "review", "unmodelled_code"}  # own rules
    own |= {"third_party"}  # the libraries family's rows (libraries.cuda_only / npu_path)
    own |= {"tensorflow"}  # the tf family's rows (each carries its own tf.* rule)
    own |= {"dynamic_shape"}  # the assess family's rows (assess.dynamic_shape)
    own |= {"dynamic_shape"}  # the assess family's rows (assess.dynamic_shape)
    categories = set(tables.unsupported.categories) - own
    assert {f"unsupported.{c}" for c in categories} == {
        r for r in RULES if r[:12] == "unsupported."
    }


def test_a_second_different_declaration_is_refused() -> None:
    with pytest.raises(ValueError, match="declared twice"):
        declare("tensor_methods.cuda_call", "something else", "")
    with pytest.raises(ValueError, match="family"):
        declare("no_dot", "x", "")


@pytest.mark.parametrize(
    "case", [c for r in sorted(RULES) for c in fixture_cases(FIXTURES, r)], ids=str
)
def test_recorded_ids_are_declared_with_their_kind(case: Path) -> None:
    result = run_case(case)
    for e in result.events:
        assert RULES[e.rule].kind == CHANGE, e.rule
        assert e.caveat == bool(RULES[e.rule].caveat)
    for n in result.notices:
        rule = RULES[n.rule]
        assert rule.kind == (OPEN_WORK if n.open_work else ADVICE if n.advice else rule.kind)
        if not n.category:
            assert rule.kind not in (OPEN_WORK, ADVICE), n.rule


def test_options_sidecars_are_valid_json() -> None:
    for sidecar in FIXTURES.glob("*/*.options.json"):
        assert isinstance(json.loads(sidecar.read_text(encoding="utf-8")), dict)


def test_rule_command_prints_the_page() -> None:
    shown = tool("rule", "device_strings.int_device")
    assert shown.returncode == 0
    assert shown.stdout == (PAGES / "device_strings.int_device.md").read_text(encoding="utf-8")
    assert tool("--explain", "device_strings.int_device").stdout == shown.stdout


def test_unknown_rule_id_gets_the_closest_ids() -> None:
    typo = tool("rule", "tensor_methods.cuda_cal")
    assert typo.returncode == 2 and typo.stdout == ""
    assert typo.stderr.startswith("ms_fmk_transplt: error: tensor_methods.cuda_cal: unknown rule")
    assert "did you mean tensor_methods.cuda_call" in typo.stderr
    assert "user_rules.ArgsModifyRule" in tool("rule", "ArgsModifyRule").stderr


def test_rule_command_lists_every_rule() -> None:
    listed = tool("rule").stdout.splitlines()
    assert [line.split()[0] for line in listed] == sorted(RULES)
    assert all(RULES[line.split()[0]].summary in line for line in listed)


def test_ignore_takes_an_id_prefix_and_leaves_a_note(tmp_path: Path) -> None:
    from ms_fmk_transplt.engine import migrate_source

    source = b"import torch\nx = torch.cuda.nvtx.range_push('a')  # msft: ignore[device_api]\n"
    result = migrate_source(source, "t.py", tables_for())
    assert result.output == source and not [n for n in result.notices if n.open_work]
    (note,) = result.notices
    assert (note.rule, note.line) == ("optout.ignore", 2) and "1 row dropped" in note.message
