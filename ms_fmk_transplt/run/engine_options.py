"""The engine's options of a run or of the path modes (``--check/--diff/--inplace``), from the
command's: the -r file read, --select / --ignore checked against the rule pages (a pattern
that names no rule is an error, one that names only rules they cannot turn off a warning),
--npu-option values typed against the adapter's table. Apart from the run's pipeline, so a
one-file ``--check`` imports no project scan, staging or report code."""

from __future__ import annotations

import dataclasses
import sys

from ms_fmk_transplt.catalogue.rule_catalog import rules_with
from ms_fmk_transplt.catalogue.rule_pages import ids_of, pattern_problem
from ms_fmk_transplt.engine import EngineOptions
from ms_fmk_transplt.engine.rules import registry
from ms_fmk_transplt.errors import UserError
from ms_fmk_transplt.records import RunOptions
from ms_fmk_transplt.tables import Tables
from ms_fmk_transplt.tables.user_rule_file import load_user_rules


def _check_rule_pattern(flag: str, pattern: str) -> None:
    problem = pattern_problem(pattern)
    if problem:
        raise UserError(flag, problem)


def fixed_rule_warning(flag: str, pattern: str) -> str | None:
    """The warning for a --select / --ignore pattern that only names rules these options do not
    act on (None for any other)."""
    covered = ids_of(pattern)
    registry.declared(covered)
    fixed = rules_with("fixed")  # (Rule.fixed; tests/test_rule_selection_warnings.py checks
    # that each one outlives --ignore on its fixtures)
    if not covered or any(i not in fixed for i in covered):
        return None
    reasons = "; ".join(dict.fromkeys(fixed[i] for i in covered))
    one = covered == [pattern]
    names = "" if one else f" ({', '.join(covered)})"
    what = "cannot be turned off"
    if flag == "--select":
        what = f"--select does not act on {'it' if one else 'them'}"
    return f"ms_fmk_transplt: warning: {flag} {pattern}{names}: {what} ({reasons})"


def engine_options(options: RunOptions, tables: Tables) -> EngineOptions:
    """Validates what the user asked for (-r file) before anything is written; a --select /
    --ignore id that cannot be turned off gets a warning on stderr and the run goes on."""
    rules = load_user_rules(options.rule_file) if options.rule_file else None
    for flag, patterns in (("--select", options.select), ("--ignore", options.ignore)):
        for pattern in patterns:
            _check_rule_pattern(flag, pattern)
            warning = fixed_rule_warning(flag, pattern)
            if warning:
                print(warning, file=sys.stderr)
    npu_options = _npu_options(options, tables)
    engine = EngineOptions(
        user_rules=rules,
        specify_device=options.specify_device,
        similar=options.similar,
        select=options.select,
        ignore=options.ignore,
        todo_comments=options.todo_comments,
        input_lines=options.analyse,
        npu_options=npu_options,
    )
    if options.file_timeout is not None:
        engine = dataclasses.replace(engine, file_seconds=options.file_timeout)
    if options.max_file_mib is None:
        return engine
    limit = int(options.max_file_mib * 2**20)  # an explicit limit holds for both passes
    return dataclasses.replace(engine, max_file_bytes=limit, max_cst_bytes=limit)


def _npu_options(options: RunOptions, tables: Tables) -> tuple[tuple[str, object], ...]:
    """--npu-option NAME=VALUE values, typed and checked against the adapter's option table
    (one error line naming the option and its allowed values otherwise)."""
    if not options.npu_options:
        return ()
    table = tables.tf_adapter
    out: dict[str, object] = {}
    for item in options.npu_options:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UserError("--npu-option", f"{item!r}: expected NAME=VALUE")
        try:
            value = table.parse_value(name, text.strip())
        except ValueError as exc:
            raise UserError("--npu-option", str(exc)) from None
        places = ("NPURunConfig", "npu_device", "session")
        problems = [table.problem(name, value, place) for place in places]
        if all(problems):
            raise UserError("--npu-option", str(problems[0]))
        out[name] = value
    return tuple(out.items())
