"""``-h/--help`` of every command, through the real entry point, at 80 and 120 columns: wrapped
at the terminal's width by click (no line wider than the terminal, no word broken across two
lines, not even at a hyphen), the three commands listed, the bare command answered with the
help."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from ms_fmk_transplt.commands.cli import distributed, main
from ms_fmk_transplt.commands.kit_cli import kit
from ms_fmk_transplt.commands.paths_cli import paths_main

ROOT = Path(__file__).resolve().parent.parent
HELPS: list[tuple[tuple[str, ...], Any]] = [  # the command line, and the command it shows
    (("--help",), main),
    (("kit", "-h"), kit),
    (("distributed", "-h"), distributed),
    (("--check", "-h"), paths_main),
]


def tool(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", *args], capture_output=True, text=True, env=env
    )


def unwrapped_words(command: click.Command) -> set[str]:
    """The words of ``command``'s help laid out so wide that nothing wraps: the source text."""
    wide = {**command.context_settings, "terminal_width": 10**6, "max_content_width": 10**6}
    ctx = command.context_class(command, info_name="ms_fmk_transplt", **wide)
    return set(command.get_help(ctx).split())


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize(("args", "command"), HELPS)
def test_help_fits_the_terminal_and_breaks_no_word(
    args: tuple[str, ...], command: Any, columns: int
) -> None:
    """At 80 columns main's epilog and kit's table were pre-wrapped at ~95 columns (the
    terminal then split `[PA`/`THS]`), and click broke `per-`/`step` at its hyphen."""
    done = tool(*args, columns=columns)
    assert done.returncode == 0, done.stderr
    words = unwrapped_words(command)
    for line in done.stdout.splitlines():
        assert len(line) <= columns, line
        assert set(line.split()) <= words, (line, set(line.split()) - words)


def test_rule_help_fits_80_columns() -> None:
    done = tool("rule", "-h")
    assert done.returncode == 0 and done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 78


def test_help_lists_the_three_commands_one_line_each() -> None:
    """``kit`` and ``rule`` (taken by the launcher as the first word) are listed with
    ``distributed``, each described whole on one line at 80 columns."""
    lines = tool("--help").stdout.splitlines()
    start = lines.index("Commands:") + 1
    rows = lines[start : lines.index("", start)]
    assert [row.split()[0] for row in rows] == ["distributed", "kit", "rule"]
    assert all(not row.endswith("...") and len(row.split()) > 4 for row in rows)
    for name in ("kit", "rule"):  # what they describe is what they are
        assert tool(name, "-h").returncode == 0


@pytest.mark.parametrize(("args", "usage"), [((), "[COMMAND]"), (("kit",), "kit [OPTIONS]")])
def test_the_bare_command_prints_its_help(args: tuple[str, ...], usage: str) -> None:
    """No arguments: the help (on stderr, exit 2, as click's no_args_is_help), not "Missing
    option '-i'"."""
    done = tool(*args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("Usage: ms_fmk_transplt ") and usage in done.stderr
    assert "Options:" in done.stderr and "Missing" not in done.stderr
