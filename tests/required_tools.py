"""Tests that need a tool from outside the package: skipped where it is missing, failed instead
when ``MSFT_REQUIRE_TOOLS=1`` (set by .ci/run, which installs them), so CI cannot pass with them
silently skipped.

A test asks with ``@needs_tool(name, found, reason)`` (a marker, checked before its fixtures are
set up) or ``need_tool(name, found, reason)`` (in a test, a fixture or at module level). Every
name is one of ``TOOLS``; ``NOT_REQUIRED`` lists the ones CI does not provide, whose tests stay
skips even under the flag.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType

import pytest

REQUIRE = "MSFT_REQUIRE_TOOLS"

# name -> where CI gets it
TOOLS = {
    "chromium": "Debian's chromium (.ci/run installs it): report.html in a real browser",
    "shellcheck": "Debian's shellcheck (.ci/run): lints the generated run_distributed_npu.sh",
    "soffice": "LibreOffice Calc, headless (.ci/run): opens and prints the workbook",
    "pdftotext": "Debian's poppler-utils (.ci/run): reads the printed workbook",
    "carlito": "Debian's fonts-crosextra-carlito (.ci/run): Calibri's metrics for the printed "
    "workbook",
    "python3.9": ".ci/run: a Python 3.9 venv with the tool (.venv39, MS_FMK_TRANSPLT_PYTHON39)",
    "git": "git: the pre-commit hooks test",
    "pre-commit": "the test extra",
    "torch": "the test extra (torch's CPU build): the executed migrations",
    "tensorflow": "the test extra (tensorflow-cpu, Python < 3.12): the executed TF migrations",
    "msprobe": "mindstudio-probe 26.2.0, with --no-deps after tests/msprobe_requirements.txt "
    "(.ci/run): the precision kit's dumps and their comparison",
    "hypothesis": "the test extra",
    "hypothesmith": "the test extra",
    "MSFT_TF_SOURCE": "a checkout of the Ascend TF adapter's source, named by this variable",
}

# Missing in CI on purpose: these stay skips under MSFT_REQUIRE_TOOLS=1.
NOT_REQUIRED = {
    # a source checkout, not a package: CI has none (the test compares the table with it)
    "MSFT_TF_SOURCE",
    # pyproject.toml installs tensorflow-cpu only where its wheels exist
    *(["tensorflow"] if sys.version_info >= (3, 12) else []),
}


def required(name: str) -> bool:
    """Whether a missing ``name`` fails its tests rather than skipping them."""
    if name not in TOOLS:
        raise ValueError(f"unknown tool {name!r}: add it to TOOLS in {__name__}")
    return os.environ.get(REQUIRE) == "1" and name not in NOT_REQUIRED


def need_tool(name: str, found: object, reason: str, *, module: bool = False) -> None:
    """Go on when ``found`` (a path, a module, True); otherwise skip, or fail under the flag.
    ``module=True`` at a test module's top level (a failure there is a collection error)."""
    __tracebackhide__ = True  # a skip is reported at the caller's line
    fail = required(name)  # first: an unknown name is refused even where the tool is found
    if found:
        return
    if fail:
        pytest.fail(
            f"{name} is missing: {reason}. {REQUIRE}=1 makes a missing tool a failure "
            f"(it comes from {TOOLS[name]}).",
            pytrace=False,
        )
    pytest.skip(reason, allow_module_level=module)


def needs_tool(name: str, found: object, reason: str) -> pytest.MarkDecorator:
    """The marker form of ``need_tool`` for a test function or class (tests/conftest.py runs it
    first when the test is set up)."""
    required(name)  # an unknown name fails at import, not only when the tool is missing
    return pytest.mark.needs_tool(name, bool(found), reason)


def need_module(name: str, reason: str) -> ModuleType:
    """``pytest.importorskip`` at a module's top level, failing under the flag."""
    __tracebackhide__ = True
    try:
        return importlib.import_module(name)
    except ImportError:
        need_tool(name, None, reason, module=True)
        raise  # not reached: need_tool skipped or failed
