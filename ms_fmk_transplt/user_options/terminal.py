"""The terminal the commands print to: ``--color auto|always|never`` as ruff spells it; with
``auto`` rich decides from the stream and honours ``NO_COLOR`` and ``FORCE_COLOR``."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from rich.console import Console

COLOR_CHOICES = ("auto", "always", "never")
# the --color option of the run and of the path modes (one declaration, one help text)
COLOR_OPTION = click.option(
    "--color",
    type=click.Choice(COLOR_CHOICES),
    default="auto",
    show_default=True,
    help="Colour the output: auto (a terminal, unless NO_COLOR is set), always, never.",
)


def console(color: str = "auto", **options: Any) -> Console:
    """A rich Console for ``--color``: ``always`` colours even a pipe, ``never`` prints no
    escape sequence at all, ``auto`` colours a terminal unless NO_COLOR is set. (rich is
    imported here, not with the module: ``--help`` and a clean ``--check`` never need it.)"""
    from rich.console import Console

    if color == "always":
        return Console(force_terminal=True, **options)
    if color == "never":
        # (not a terminal for rich, whatever FORCE_COLOR says: no escape sequence at all)
        return Console(force_terminal=False, color_system=None, **options)
    return Console(**options)


class LazyConsole:
    """The console of ``--color``, made on first use: a command that prints only plain lines
    (a clean ``--check``) never imports rich."""

    def __init__(self, color: str, **options: Any) -> None:
        self._color, self._options = color, options
        self._console: Console | None = None

    def get(self) -> Console:
        if self._console is None:
            self._console = console(self._color, **self._options)
        return self._console

    def colours(self) -> bool:
        """Whether lines printed to it (click.style) should carry colour. ``never``, and ``auto``
        on a stream that is no terminal with neither of the variables that make rich take one
        for a terminal, answer no without making the console: what rich answers there."""
        if self._color == "never" or (self._color == "auto" and not self._maybe_terminal()):
            return False
        made = self.get()
        return made.is_terminal and made.color_system is not None and not made.no_color

    def _maybe_terminal(self) -> bool:
        if "file" in self._options or {"FORCE_COLOR", "TTY_COMPATIBLE"} & set(os.environ):
            return True  # rich decides
        stream = sys.stderr if self._options.get("stderr") else sys.stdout
        try:
            return bool(stream.isatty())
        except (AttributeError, ValueError):  # no stream, or a closed one: rich decides
            return True
