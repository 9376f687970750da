"""How ``-h/--help`` is laid out, for every command (the run, ``distributed``, ``kit``, the path
modes): click's own formatting, wrapped at the terminal's width (at most ``MAX_WIDTH``), with no
word broken across two lines, not even at its hyphen (``per-step``, ``comma-separated``): help
texts are paragraphs click wraps, never lines wrapped by hand."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import click

MAX_WIDTH = 100  # the widest help, on a wide terminal (click wraps at the terminal's width - 2)
CONTEXT: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": MAX_WIDTH}

_JOINED = "\u2011"  # a non-breaking hyphen while click wraps: textwrap breaks only at "-"
_INSIDE_A_WORD = re.compile(r"(?<=\w)-(?=\w)")


def _joined(text: str) -> str:
    return _INSIDE_A_WORD.sub(_JOINED, text)


class HelpFormatter(click.HelpFormatter):
    """click's formatter, which does not break a word at a hyphen inside it."""

    def write_text(self, text: str) -> None:
        super().write_text(_joined(text))

    def write_dl(
        self, rows: Iterable[tuple[str, str]], col_max: int = 30, col_spacing: int = 2
    ) -> None:
        super().write_dl([(term, _joined(text)) for term, text in rows], col_max, col_spacing)

    def getvalue(self) -> str:
        return super().getvalue().replace(_JOINED, "-")


class HelpContext(click.Context):
    formatter_class = HelpFormatter


class Command(click.Command):
    context_class = HelpContext


class Group(click.Group):
    context_class = HelpContext
