"""The terminal the commands print to: ``--color auto|always|never`` as ruff spells it; with
``auto`` rich decides from the stream and honours ``NO_COLOR`` and ``FORCE_COLOR``."""

from __future__ import annotations

from typing import Any

from rich.console import Console

COLOR_CHOICES = ("auto", "always", "never")


def console(color: str = "auto", **options: Any) -> Console:
    """A rich Console for ``--color``: ``always`` colours even a pipe, ``never`` prints no
    escape sequence at all, ``auto`` colours a terminal unless NO_COLOR is set."""
    if color == "always":
        return Console(force_terminal=True, **options)
    if color == "never":
        # (not a terminal for rich, whatever FORCE_COLOR says: no escape sequence at all)
        return Console(force_terminal=False, color_system=None, **options)
    return Console(**options)
