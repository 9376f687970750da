"""``--diff``'s output: a unified diff of a file's bytes, faithful when piped (it applies with
``patch``), made safe to show when it goes to a terminal."""

from __future__ import annotations

import difflib
import io
import sys
from typing import TYPE_CHECKING

import click

from ms_fmk_transplt.safe_names import shown

if TYPE_CHECKING:
    from rich.console import Console


def print_diff(console: Console, rel: str, before: bytes, output: bytes) -> None:
    """Not to a terminal (``| patch``): the lines' bytes as they are (lines end at LF only), so
    the diff applies; to a terminal (or forced colours): control and bidi characters escaped as
    in names (``\\x1b``, ``\\u202e``: safe_names.shown), tabs kept, coloured if the console is."""
    name = rel.lstrip("/").encode("utf-8", "surrogateescape")
    old, new = io.BytesIO(before).readlines(), io.BytesIO(output).readlines()
    diff = b"".join(
        line if line.endswith(b"\n") else line + b"\n\\ No newline at end of file\n"
        for line in difflib.diff_bytes(difflib.unified_diff, old, new, b"a/" + name, b"b/" + name)
    )
    if not (console.is_terminal or sys.stdout.isatty()):
        click.echo(diff, nl=False)  # bytes: written to the binary stream as they are
        return
    text = "".join(
        "\t".join(shown(part) for part in line.removesuffix("\r").split("\t")) + "\n"
        for line in diff.decode("utf-8", "surrogateescape").split("\n")[:-1]
    )
    from rich.syntax import Syntax

    console.print(Syntax(text, "diff", theme="ansi_dark") if console.is_terminal else text, end="")
