"""Console-script entry point: the path modes (--check/--diff/--inplace FILES...) or the migration
CLI. Kept tiny so that a pre-commit hook only imports what it uses."""

from __future__ import annotations

import sys

PATH_MODES = ("--check", "--diff", "--inplace")


def entry() -> None:
    args = sys.argv[1:]
    if args[:1] == ["rule"] or "--explain" in args:
        from ms_fmk_transplt.rule_cli import rule_main

        if "--explain" in args:
            at = args.index("--explain")
            args = ["", *args[at + 1 : at + 2]]
        sys.exit(rule_main(args[1:]))
    if any(arg in PATH_MODES for arg in sys.argv[1:]):
        from ms_fmk_transplt.paths_cli import paths_main

        paths_main(prog_name="ms_fmk_transplt")
    else:
        from ms_fmk_transplt.cli import main

        main(prog_name="ms_fmk_transplt")
