"""--select / --ignore of a rule id they cannot turn off says so (one warning line on stderr, the
run goes on) instead of being silently ignored; and the list of such ids is true."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_case, tool

from ms_fmk_transplt.catalogue.rule_catalog import rules_with
from ms_fmk_transplt.catalogue.rule_pages import known_ids
from ms_fmk_transplt.commands import rule_docs
from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.engine.options import EngineOptions
from ms_fmk_transplt.engine.rules import registry

ROOT = Path(__file__).resolve().parent.parent
registry.declare_all()
FIXED_RULES = rules_with("fixed")  # the rules --select / --ignore do not act on, and why
SOURCE = "import torch\n\nx = torch.ones(2).cuda()\n"
WARNING = (
    "ms_fmk_transplt: warning: --ignore imports.torch_npu: cannot be turned off (lines inserted "
    "for the file's other changes: they go when those changes go)"
)


def test_ignoring_torch_npu_warns_and_the_check_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "t.py"
    path.write_text(SOURCE)
    plain = tool("--check", str(path))
    ignored = tool("--check", "--ignore", "imports.torch_npu", str(path))
    assert ignored.stderr.splitlines()[0] == WARNING
    assert ignored.stderr.splitlines()[1:] == plain.stderr.splitlines()
    assert ignored.stdout == plain.stdout and "imports.torch_npu" in plain.stdout
    assert ignored.returncode == plain.returncode == 1


@pytest.mark.parametrize(
    ("flag", "pattern", "expected"),
    [
        (
            "--ignore",
            "optout",
            "ms_fmk_transplt: warning: --ignore optout (optout.ignore, optout.skip_file): cannot "
            "be turned off (notes of your own `# msft:` comments: remove the comment instead)",
        ),
        (
            "--select",
            "parse.limit",
            "ms_fmk_transplt: warning: --select parse.limit: --select does not act on it (the "
            "file is not migrated; `# msft: skip-file` leaves it out)",
        ),
        ("--ignore", "imports", None),  # imports.cuda_module can be turned off
        ("--ignore", "parse", None),  # parse.bidi_control can be turned off
        ("--select", "tensor_methods", None),
    ],
)
def test_only_patterns_naming_nothing_but_fixed_rules_warn(
    tmp_path: Path, flag: str, pattern: str, expected: str | None
) -> None:
    path = tmp_path / "t.py"
    path.write_text(SOURCE)
    proc = tool("--check", flag, pattern, str(path))
    warnings = [line for line in proc.stderr.splitlines() if "warning:" in line]
    assert warnings == ([expected] if expected else [])
    assert proc.returncode in (0, 1)


def test_migration_mode_warns_too(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "t.py").write_text(SOURCE)
    args = ["-q", "-i", str(src), "-o", str(tmp_path / "out"), "--ignore", "imports.torch_npu"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert WARNING in result.output.splitlines()
    assert "import torch_npu" in (tmp_path / "out" / "src_msft" / "t.py").read_text()


@pytest.mark.parametrize("rule", sorted(FIXED_RULES))
def test_each_fixed_rule_outlives_ignore_on_its_fixtures(
    rule: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the warning claims: --ignore <id> leaves every finding of the id in place."""
    assert rule in known_ids()
    folder = ROOT / "fixtures" / "rules" / rule
    cases = sorted(p for p in folder.glob("*.py") if not p.name.endswith(".expected.py"))
    counts = []
    real = rule_docs.fixture_options
    for ignore in ((), (rule,)):

        def options(case: Path, root: Path, ignore: tuple[str, ...] = ignore):
            chosen, fault = real(case, root)
            return dataclasses.replace(chosen or EngineOptions(), ignore=ignore), fault

        monkeypatch.setattr(rule_docs, "fixture_options", options)
        found = []
        for case in cases:
            result = run_case(case)
            found.append(sum(x.rule == rule for x in [*result.events, *result.notices]))
        counts.append(found)
    assert any(counts[0]), f"no fixture of {rule} fires"
    assert counts[1] == counts[0]
