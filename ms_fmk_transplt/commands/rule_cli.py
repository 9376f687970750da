"""``ms_fmk_transplt rule [ID]`` (also ``--explain ID``): print a rule's page, or list them all."""

from __future__ import annotations

import os
import sys

from ms_fmk_transplt.catalogue.rule_pages import known_ids, page, suggestions, summary
from ms_fmk_transplt.errors import EXIT_BAD_INPUT, EXIT_OK

USAGE = "usage: ms_fmk_transplt rule [RULE_ID]  (or: ms_fmk_transplt --explain RULE_ID)"


def rule_main(args: list[str]) -> int:
    """Print the page of ``args[0]`` (exit 0), every id with its summary when no id is given,
    or one error line with the closest ids (exit 2). Piping into ``head`` is fine."""
    try:
        return _rule_main(args)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


def _rule_main(args: list[str]) -> int:
    if args and args[0] in ("-h", "--help"):
        print(USAGE)
        print("Print the documentation page of a rule id (as in change_list.csv, the reports,")
        print("`# msft: ignore[<id>]`); without an id, list every rule with its summary.")
        return EXIT_OK
    if len(args) > 1:
        print(f"ms_fmk_transplt: error: one rule id at a time\n{USAGE}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not args:
        width = max(len(i) for i in known_ids())
        for rule_id in known_ids():
            print(f"{rule_id:<{width}}  {summary(rule_id)}")
        return EXIT_OK
    text = page(args[0])
    if text is None:
        close = suggestions(args[0])
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        print(
            f"ms_fmk_transplt: error: {args[0]}: unknown rule id{hint} "
            "(`ms_fmk_transplt rule` lists them all)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    _show(text)
    return EXIT_OK


def _show(text: str) -> None:
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(text))
    else:
        sys.stdout.write(text)
