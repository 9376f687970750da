"""``[tool.ms_fmk_transplt]`` in pyproject.toml: defaults for the command line, found as ruff
finds its configuration, but never above the project.

The file used is the nearest ``pyproject.toml`` holding a ``[tool.ms_fmk_transplt]`` table, in
the folder of the input (``-i``; the first PATH of ``--check/--diff/--inplace``) or above it up
to the project root: the first folder upward holding ``.git`` (a folder or a file, as in a
submodule). Without a ``.git`` there, only the input's own folder is read; a shared folder
(world-writable with the sticky bit, as /tmp) above the input is never read, nor anything above
it. A pyproject.toml
without the table is passed over. Keys are spelled as ruff spells its own; an option given on
the command line wins over the file; ``--isolated`` reads no file. The file used is named on
stderr (not with ``-q``) and in the log. The file is data only: it is parsed as TOML (never
executed), read up to ``MAX_BYTES``, and anything wrong with it (unknown key, wrong type, a
number out of its bounds, bad TOML, binary, too large) is one error line naming the file (and
the key), exit code 2. A table the tool does not read but was meant for it
(``[tool.ms-fmk-transplt]``, ``[ms_fmk_transplt]``: ``misnamed``) is one warning line naming
the file and the table's name (not with ``-q``), and the search goes on as if it were not
there. The numeric options of the command line (``-j``, ``--max-file-size``,
``--file-timeout``) are checked against the same bounds (``option_values.BOUNDS``). The keys,
the kind of value each takes and the commands whose options they set are the option schema's
(``option_schema.SCHEMA``): the run, the path modes and ``kit``.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from ms_fmk_transplt.catalogue.rule_pages import pattern_problem
from ms_fmk_transplt.errors import UserError, fail
from ms_fmk_transplt.safe_names import shown
from ms_fmk_transplt.safety.regular_files import open_regular
from ms_fmk_transplt.user_options.option_schema import KEYS, SCHEMA
from ms_fmk_transplt.user_options.option_values import BOUNDS, bounded

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9/3.10 (the dependency `tomli; python_version < "3.11"`)
    import tomli as tomllib

NAME = "pyproject.toml"
TABLE = "ms_fmk_transplt"
MAX_BYTES = 1 << 20  # a pyproject.toml is a few KiB; a larger one is not read as configuration
ROOT_MARKER = ".git"  # the project root: the search upward stops at the first folder holding it
LOOSE_NAME = re.compile(rb"ms[-_.]?fmk[-_.]?transplt", re.IGNORECASE)  # the table, as misspelt


GIVEN = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


@dataclass(frozen=True)
class Config:
    path: Path
    values: dict[str, Any]  # key (as in the file) -> checked value


def find(start: Path, warned: list[str] | None = None) -> Config | None:
    """The configuration for ``start`` (a file or folder, which need not exist): the nearest
    pyproject.toml with the table, in its folder or above it up to the project root (see
    ``searched``); None when there is none. The misnamed tables met on the way are added to
    ``warned``, one line each."""
    warned = [] if warned is None else warned
    here = Path(os.path.abspath(start))
    try:
        folder = here if here.is_dir() else here.parent
    except OSError:  # a path the system cannot look at (past PATH_MAX): the run says why
        return None
    for candidate in searched(folder):
        path = candidate / NAME
        if not os.path.lexists(path):
            continue
        table = _table(path, warned)
        if table is not None:
            return Config(path, {key: _checked(path, key, v) for key, v in table.items()})
    return None


def searched(folder: Path) -> list[Path]:
    """The folders whose pyproject.toml may configure a run on ``folder``: ``folder`` and those
    above it up to the first one holding ``.git``; ``folder`` alone when there is none. A shared
    folder above ``folder`` (world-writable with the sticky bit, as /tmp: anyone can put a
    ``.git`` there) ends the search before it."""
    chain = [folder]
    while not os.path.lexists(chain[-1] / ROOT_MARKER):
        above = chain[-1].parent
        if above == chain[-1] or _shared(above):
            return [folder]
        chain.append(above)
    return chain


def _shared(folder: Path) -> bool:
    try:
        return os.stat(folder).st_mode & 0o1002 == 0o1002
    except OSError:
        return True  # a folder that cannot be looked at is not searched either


def _table(path: Path, warned: list[str]) -> dict[str, Any] | None:
    """The ``[tool.ms_fmk_transplt]`` table of ``path``; None if it has none (a file that does
    not name the tool at all is not parsed, so a broken pyproject.toml of another tool stays
    its own business). A misnamed table is added to ``warned``."""
    try:
        with open_regular(path) as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise UserError(path, f"cannot read this file ({exc.strerror})") from exc
    if TABLE.encode() not in data:  # only a misnamed table, if any: read, never an error
        _unread_table(path, data, warned)
        return None
    if len(data) > MAX_BYTES:
        raise UserError(path, f"larger than {MAX_BYTES >> 20} MiB: not read as configuration")
    parsed = _parsed(path, data)
    _unread_table(path, parsed, warned)
    tool = parsed.get("tool")
    if not isinstance(tool, dict) or TABLE not in tool:
        return None
    table = tool[TABLE]
    if not isinstance(table, dict):
        raise UserError(path, f"tool.{TABLE} must be a table ([tool.{TABLE}])")
    return table


def _parsed(path: Path, data: bytes) -> dict[str, Any]:
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UserError(path, f"not UTF-8 text (byte {exc.start}): not valid TOML") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UserError(path, f"not valid TOML ({' '.join(str(exc).split())})") from exc
    except RecursionError as exc:
        raise UserError(path, "not valid TOML (nested too deeply)") from exc


def _unread_table(path: Path, data: bytes | dict[str, Any], warned: list[str]) -> None:
    """A table of ``path`` (its bytes or its parsed TOML) meant for the tool that it does not
    read: one line in ``warned``. Bytes that do not parse are another tool's business."""
    if isinstance(data, bytes):
        if len(data) > MAX_BYTES or not LOOSE_NAME.search(data):
            return
        try:
            data = _parsed(path, data)
        except UserError:
            return
    misnamed = _misnamed(data)
    if misnamed:
        warned.append(f"{shown(path)}: [{misnamed}] is not read: the table is [tool.{TABLE}]")


def _misnamed(parsed: dict[str, Any]) -> str:
    """The name of a table meant for the tool that it does not read ("": none): under ``tool``
    spelt otherwise (``ms-fmk-transplt``), or at the top of the file."""
    tool = parsed.get("tool")
    for name, value in tool.items() if isinstance(tool, dict) else ():
        if name != TABLE and _loose(name) and isinstance(value, dict):
            return f"tool.{name}"
    return next((n for n, v in parsed.items() if _loose(n) and isinstance(v, dict)), "")


def _loose(name: str) -> bool:
    return LOOSE_NAME.fullmatch(name.encode(errors="replace")) is not None


def _checked(path: Path, key: str, value: object) -> Any:
    """``value`` of ``key`` as the command line would have it, or a UserError naming both."""
    kind = KEYS.get(key)
    if kind is None:
        import difflib

        close = difflib.get_close_matches(key.replace("_", "-"), KEYS, 1)
        hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(KEYS)})"
        raise UserError(path, f"[tool.{TABLE}]: unknown key {key!r}{hint}")

    def wrong(expected: str) -> UserError:
        got = repr(value) if len(repr(value)) <= 40 else f"{type(value).__name__} value"
        return UserError(path, f"[tool.{TABLE}] {key}: expected {expected}, got {got}")

    if kind == "ids":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise wrong('a list of rule ids or id prefixes (["device_api", ...])')
        for pattern in value:
            _check_rule_pattern(path, key, pattern)
        return tuple(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise wrong("true or false")
        return value
    if kind in BOUNDS:
        number = None if isinstance(value, str) else bounded(kind, value)
        if number is None:
            raise wrong(BOUNDS[kind].expected)
        return number
    if not isinstance(value, str) or not value.strip():
        raise wrong("a string")
    if kind == "version":
        from ms_fmk_transplt.tables import resolve_version  # the tables only when one is given

        try:
            resolve_version(value)
        except ValueError as exc:
            raise UserError(path, f"[tool.{TABLE}] {key}: {exc}") from exc
        return value
    return str(path.parent / value)  # rule-file: relative to the pyproject.toml's folder


def _check_rule_pattern(path: Path, key: str, pattern: str) -> None:
    problem = pattern_problem(pattern)
    if problem:
        raise UserError(path, f"[tool.{TABLE}] {key}: {problem}")


def apply(ctx: click.Context, params: dict[str, Any], mode: str, config: Config) -> dict[str, Any]:
    """``params`` with the file's values for the options of ``mode`` (a command of the schema)
    the command line did not give; the values of an option's several keys add up."""
    out = dict(params)
    for option in SCHEMA:
        found = [config.values[key] for key in option.keys if key in config.values]
        if not found or mode not in option.commands:
            continue
        if ctx.get_parameter_source(option.param) in GIVEN:
            continue
        if option.attrs.get("multiple"):
            out[option.param] = tuple(v for value in found for v in value)
        else:
            out[option.param] = not found[0] if option.negated else found[0]
    return out


def configured(mode: str, start: Callable[[dict[str, Any]], str]) -> Callable[..., Any]:
    """Decorator of a click command's function taking ``isolated``: the function is called with
    the configuration applied to its parameters (the file's path in ``ctx.meta["config_file"]``).
    ``start(params)`` is the path the search starts from; one line on stderr names the file used
    (not with ``quiet``), or says there is none (with ``verbose``)."""

    def decorate(function: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(function)
        def wrapper(*args: Any, **params: Any) -> None:
            ctx = click.get_current_context()
            isolated = params.pop("isolated")
            config: Config | None = None
            warned: list[str] = []  # the misnamed tables met
            if not isolated:
                try:
                    config = find(Path(start(params)), warned)
                except UserError as exc:
                    fail(str(exc))
                if config is not None:
                    params = apply(ctx, params, mode, config)
                    ctx.meta["config_file"] = str(config.path)
            for line in warned if not params.get("quiet") else ():
                click.echo(f"ms_fmk_transplt: warning: {line}", err=True)
            if params.get("verbose") or (config is not None and not params.get("quiet")):
                click.echo(f"ms_fmk_transplt: {_used(config, isolated, start(params))}", err=True)
            function(*args, **params)

        return wrapper

    return decorate


def _used(config: Config | None, isolated: bool, start: str) -> str:
    if isolated:
        return "configuration: none (--isolated: no pyproject.toml read)"
    if config is None:
        return (
            f"configuration: none (no {NAME} with [tool.{TABLE}] at {shown(start)} or above it, "
            "up to the project root)"
        )
    return f"configuration: {shown(config.path)} [tool.{TABLE}]"
