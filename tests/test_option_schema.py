"""The option schema (``option_schema.SCHEMA``) is the one declaration of the options (issue 44):
each command's click parameters are the schema's, RunOptions is built in one place, every option
that changes results is in the cache fingerprint by value, and no other option reaches the
engine (so the fingerprint, made of those options, the -r file, the tables and the project's
facts, holds everything the engine is given)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import click
import pytest

from ms_fmk_transplt.commands.cli import distributed, main
from ms_fmk_transplt.commands.kit_cli import kit
from ms_fmk_transplt.commands.paths_cli import paths_main
from ms_fmk_transplt.records import RunOptions
from ms_fmk_transplt.run.pipeline import engine_options, result_fingerprint
from ms_fmk_transplt.tables import load_tables
from ms_fmk_transplt.user_options.option_schema import (
    DISTRIBUTED,
    KIT,
    PATHS,
    RESULT_FIELDS,
    RUN,
    SCHEMA,
    click_params,
)

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {RUN: main, DISTRIBUTED: distributed, PATHS: paths_main, KIT: kit}
BASE = RunOptions(input="in", output="out")
FIELDS = [o.run_field for o in SCHEMA if o.run_field]


def other(value: Any) -> Any:
    """A value of a field unlike ``value``."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 2
    if isinstance(value, tuple):
        return (*value, "x")
    return "x"  # a string, or None


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_takes_the_schemas_options(command: str) -> None:
    """The parameters of each command, in order, are the schema's (but -h and -V)."""
    params = [p for p in COMMANDS[command].params if p.name not in ("help", "version")]
    expected = click_params(command)
    assert [(p.name, p.opts, type(p)) for p in params] == [
        (p.name, p.opts, type(p)) for p in expected
    ]
    assert all(isinstance(p, (click.Option, click.Argument)) for p in params)


def test_run_options_are_built_in_one_place() -> None:
    """No module but run_options.py makes a RunOptions (the others replace fields of one)."""
    package = ROOT / "ms_fmk_transplt"
    makers = sorted(
        p.relative_to(package).as_posix()
        for p in package.rglob("*.py")
        if re.search(r"\bRunOptions\(", p.read_text(encoding="utf-8"))
    )
    assert makers == ["commands/run_options.py"]


def test_every_result_option_is_in_the_fingerprint() -> None:
    """Enumerated from the schema: a result-changing option's field, changed alone, changes the
    fingerprint; any other field does not (a warm cache serves runs that differ in it)."""
    tables = load_tables("")
    engine = engine_options(BASE, tables)
    base = result_fingerprint(BASE, engine, tables)
    assert RESULT_FIELDS and set(RESULT_FIELDS) <= set(FIELDS)
    for name in FIELDS:
        changed = dataclasses.replace(BASE, **{name: other(getattr(BASE, name))})
        moved = result_fingerprint(changed, engine, tables) != base
        assert moved == (name in RESULT_FIELDS), name


def test_no_other_option_reaches_the_engine() -> None:
    """The engine options are made from the result-changing options alone: a field of any
    other option, changed, leaves every engine option as it was."""
    tables = load_tables("")

    def values(options: RunOptions) -> dict[str, object]:
        engine = engine_options(options, tables)
        return {f.name: getattr(engine, f.name) for f in dataclasses.fields(engine)}

    base = values(BASE)
    for name in sorted(set(FIELDS) - set(RESULT_FIELDS)):
        changed = dataclasses.replace(BASE, **{name: other(getattr(BASE, name))})
        assert values(changed) == base, name
    # and the check sees a change: -s reaches the engine
    assert values(dataclasses.replace(BASE, specify_device=True)) != base
