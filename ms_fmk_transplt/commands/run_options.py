"""``RunOptions`` from the parsed values of a command: the one place they are built (the run and
``distributed``, the path modes, ``kit``). Each option of ``option_schema.SCHEMA`` with a
``run_field`` gives that field its value, converted here; a bad value exits with one line
(``ms_fmk_transplt: error: ...``, exit 2), in the schema's order."""

from __future__ import annotations

import keyword
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ms_fmk_transplt.errors import fail
from ms_fmk_transplt.user_options.option_schema import SCHEMA

if TYPE_CHECKING:
    from ms_fmk_transplt.records import RunOptions


def rule_patterns(values: tuple[str, ...]) -> tuple[str, ...]:
    """--select / --ignore values: repeated and/or comma-separated rule ids or id prefixes."""
    return tuple(p.strip() for v in values for p in v.split(",") if p.strip())


def resolved_version(target_version: str | None) -> str:
    """-v resolved ("": the newest known); a bad value exits with one line."""
    if target_version is None:
        return ""
    from ms_fmk_transplt.tables import resolve_version

    try:
        return resolve_version(target_version)
    except ValueError as exc:
        fail(f"-v/--target-version: {exc}")


def model_names(targets: tuple[str, ...]) -> str:
    """distributed -t values (repeated and/or comma-separated) as "a,b"; one that is not a
    variable name exits with one line."""
    names = [n.strip() for t in targets for n in t.split(",") if n.strip()]
    bad = [n for n in names if not n.isidentifier() or keyword.iskeyword(n)]
    if bad or not names:
        what = "a Python keyword, not" if bad and keyword.iskeyword(bad[0]) else "not"
        fail(f"distributed -t: {bad[0] if bad else '(empty)'!r} is {what} a variable name")
    return ",".join(dict.fromkeys(names))


def shard_part(shard: str | None) -> tuple[int, int] | None:
    """--shard I/N parsed; a bad value exits with one line."""
    if shard is None:
        return None
    from ms_fmk_transplt.run.shards import parse_shard

    try:
        return parse_shard(shard)
    except ValueError as exc:
        fail(f"--shard: {exc}")


def _negated(flag: bool) -> bool:  # --no-cache, --no-todo-comments, --no-rank-guards
    return not flag


# the conversion of a parsed value to its field's (the others are taken as parsed)
CONVERT: dict[str, Callable[[Any], Any]] = {
    "target_version": resolved_version,
    "select": rule_patterns,
    "ignore": rule_patterns,
    "distributed_target": model_names,
    "shard": shard_part,
    "merge_shards": lambda count: count or 0,
    "use_cache": _negated,
    "todo_comments": _negated,
    "rank_guards": _negated,
}


def run_options(values: Mapping[str, Any], **fixed: Any) -> RunOptions:
    """The RunOptions of a command's parsed ``values`` (click's parameter names: the options
    not given have their defaults), with ``fixed`` fields set by the command itself."""
    from ms_fmk_transplt.records import RunOptions

    fields: dict[str, Any] = {}
    for option in SCHEMA:
        if option.run_field and option.param in values:
            convert = CONVERT.get(option.run_field)
            value = values[option.param]
            fields[option.run_field] = convert(value) if convert else value
    if fields.get("shard") is not None and fields.get("merge_shards"):
        fail("--shard and --merge-shards cannot be combined: merge once every part is done")
    return RunOptions(**{**fields, **fixed})
