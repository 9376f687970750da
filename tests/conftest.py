from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from required_tools import need_tool, required  # noqa: E402


@pytest.fixture
def root() -> Path:
    return ROOT


# Tests run without the user-level result cache unless a test enables it explicitly.
os.environ.setdefault("MS_FMK_TRANSPLT_CACHE", "off")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "needs_tool(name, found, reason): see tests/required_tools.py"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``@needs_tool`` of a missing tool that is not required: a plain skip (reported at the
    test's line)."""
    for item in items:
        for mark in item.iter_markers("needs_tool"):
            name, found, reason = mark.args
            if not found and not required(name):
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """``@needs_tool`` of a missing tool under MSFT_REQUIRE_TOOLS=1: fails before any fixture
    is set up."""
    for mark in item.iter_markers("needs_tool"):
        if required(mark.args[0]):
            need_tool(*mark.args)
