"""A missing tool skips its tests, and fails them under MSFT_REQUIRE_TOOLS=1 (as .ci/run sets)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from required_tools import NOT_REQUIRED, REQUIRE, need_tool

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

# a test whose fixture records that it ran: @needs_tool decides before any fixture is set up
PROBE = """
import os
from pathlib import Path

import pytest
from required_tools import needs_tool


@pytest.fixture
def costly():
    Path(os.environ["TRACE"]).write_text("set up")


@needs_tool("chromium", None, "no browser here")
def test_in_a_browser(costly):
    pass
"""


def test_a_found_tool_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE, "1")
    need_tool("shellcheck", "/usr/bin/shellcheck", "shellcheck not installed")


def test_a_missing_tool_skips_without_the_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match="shellcheck not installed"):
        need_tool("shellcheck", None, "shellcheck not installed")


def test_a_missing_tool_fails_under_the_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match="shellcheck is missing: .*MSFT_REQUIRE_TOOLS"):
        need_tool("shellcheck", None, "shellcheck not installed")


def test_a_tool_ci_lacks_on_purpose_still_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE, "1")
    assert "MSFT_TF_SOURCE" in NOT_REQUIRED
    with pytest.raises(pytest.skip.Exception):
        need_tool("MSFT_TF_SOURCE", None, "MSFT_TF_SOURCE not set")


def test_an_unknown_tool_name_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown tool 'chrome'"):
        need_tool("chrome", "/usr/bin/chrome", "no chrome")


@pytest.mark.parametrize("flag, outcome", [("", "1 skipped"), ("1", "1 error")])
def test_the_marker_decides_before_the_fixtures(tmp_path: Path, flag: str, outcome: str) -> None:
    """Under the flag the test errors in its setup (pytest's word for a failure there)."""
    (tmp_path / "test_probe.py").write_text(PROBE, encoding="utf-8")
    trace = tmp_path / "trace"
    env = {**os.environ, REQUIRE: flag, "TRACE": str(trace), "PYTHONPATH": str(TESTS)}
    cmd = [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-rfs"]
    done = subprocess.run(
        [*cmd, str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert outcome in done.stdout and done.returncode == (1 if flag else 0), done.stdout
    assert not trace.exists()  # the fixture never ran
    if flag:
        assert "chromium is missing: no browser here. MSFT_REQUIRE_TOOLS=1" in done.stdout


def test_ci_requires_the_tools_then_runs_the_readme_command() -> None:
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert lines.index(f"export {REQUIRE}=1") < len(lines) - 1
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"&& {lines[-1]}\n" in readme
