"""Console-script entry point: the path modes (--check/--diff/--inplace FILES...), the rule pages
(``rule ID``, ``--explain ID``) or the migration CLI. Kept tiny so that a pre-commit hook only
imports what it uses. Modes that exclude each other stop here with exit code 2."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any, NoReturn

from ms_fmk_transplt import clock

PATH_MODES = ("--check", "--diff", "--inplace", "--fix")  # --fix: --inplace, as ruff says
EXCLUSIVE = (("-q", "--quiet"), ("--verbose",))  # each pair of groups cannot be combined
TAKES_VALUE = ("-i", "--input", "-o", "--output", "-r", "--rule", "--cache-dir", "-m", "--main")


def _refuse(message: str) -> NoReturn:
    from ms_fmk_transplt.errors import fail  # (only on this path: start-up stays light)

    fail(message)


def _conflicts(args: list[str]) -> None:
    modes = list(dict.fromkeys(a for a in args if a in PATH_MODES))
    if len(modes) > 1:
        _refuse(f"{modes[0]} and {modes[1]} cannot be combined: choose one mode")
    if modes and ("-i" in args or "--input" in args or "--zoo" in args):
        _refuse(f"{modes[0]} works on the files given to it and cannot be combined with -i/--zoo")
    quiet = next((a for a in args if a in EXCLUSIVE[0]), None)
    verbose = next((a for a in args if a in EXCLUSIVE[1]), None)
    if quiet and verbose:
        _refuse(f"{quiet} and {verbose} cannot be combined")


def _sub_command_help(args: list[str]) -> bool:
    """``... distributed -h``: the sub-command's help (its group's -i/-o are not needed)."""
    for i, arg in enumerate(args):
        if arg == "distributed" and (i == 0 or args[i - 1] not in TAKES_VALUE):
            return bool({"-h", "--help"} & set(args[i:]))
    return False


def entry() -> None:
    """SIGTERM stops the tool as Ctrl-C does from its first instant: while it is still loading
    (about half a second, before a run has read anything) that is one line and exit 130; a
    run's own handlers then take over (its one line, exit 130 and its interrupted.log)."""
    clock.mark()  # (the command's first step: its time covers its start-up too)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        _dispatch(sys.argv[1:])
    except KeyboardInterrupt:
        _interrupted()


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _interrupted() -> NoReturn:
    """Ctrl-C or SIGTERM that no run handled: while loading (before any run began: nothing was
    read or written, so no log either) it is said; after a run, which has said its own, not."""
    staging = sys.modules.get("ms_fmk_transplt.run.staging")  # (imported by a run only)
    if staging is None or not staging.BEGUN.is_set():
        print("ms_fmk_transplt: interrupted while starting: nothing was written", file=sys.stderr)
    sys.exit(130)


@contextlib.contextmanager
def _loading() -> Iterator[None]:
    """A command's modules imported without the cyclic garbage collector, then kept out of its
    scans (``gc.freeze``): what start-up allocates (modules, classes, the options' schema) lives
    as long as the process and holds no garbage, and collecting it again and again took 5 to
    15 ms of a one-file ``--check`` (issue 50; ``gc.freeze`` is also what a process that
    forks its workers should do first)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.freeze()
            gc.enable()


def _dispatch(args: list[str]) -> None:
    if "_MS_FMK_TRANSPLT_COMPLETE" in os.environ:  # shell completion: the words are in COMP_WORDS
        with _loading():
            from ms_fmk_transplt.commands.completion import complete

        complete()
    if args[:1] == ["rule"] or "--explain" in args:
        with _loading():
            from ms_fmk_transplt.commands.rule_cli import rule_main

        if "--explain" in args:
            at = args.index("--explain")
            args = ["", *args[at + 1 : at + 2]]
        sys.exit(rule_main(args[1:]))
    if args[:1] == ["kit"]:
        with _loading():
            from ms_fmk_transplt.commands.kit_cli import kit

        _one_line_usage_errors(kit, args[1:], "ms_fmk_transplt kit")
    _conflicts(args)
    if any(arg in PATH_MODES for arg in args):
        with _loading():
            from ms_fmk_transplt.commands.paths_cli import paths_main

        paths_main(prog_name="ms_fmk_transplt")
    elif _sub_command_help(args):
        with _loading():
            from ms_fmk_transplt.commands.cli import distributed  # its help needs no -i/-o

        distributed.main(["--help"], prog_name="ms_fmk_transplt [OPTIONS] distributed")
    else:
        with _loading():
            from ms_fmk_transplt.commands.cli import main

        _one_line_usage_errors(main, args)


def _one_line_usage_errors(command: Any, args: list[str], prog: str = "ms_fmk_transplt") -> None:
    """Runs the click command (without arguments: its help on stderr, exit 2, as click does); a
    usage error is one line (``ms_fmk_transplt: error: ...``, exit 2) instead of click's three,
    with a hint for the usual slips: a mistyped path mode, a bare path, the run's options
    written after ``distributed``."""
    import click

    if not args and getattr(command, "no_args_is_help", False):  # the bare command
        # its help on stderr, exit 2, as click >= 8.2 does (8.1, the last for Python 3.9,
        # prints it on stdout and exits 0)
        context = command.context_class(command, info_name=prog, **command.context_settings)
        print(command.get_help(context), file=sys.stderr)
        sys.exit(2)
    try:
        code = command.main(args, prog_name=prog, standalone_mode=False)
    except click.UsageError as exc:
        _refuse(_usage_message(exc, args))
    except click.ClickException as exc:
        print(f"ms_fmk_transplt: error: {exc.format_message()}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except click.Abort:  # Ctrl-C or SIGTERM inside the command, outside a run
        _interrupted()
    sys.exit(code if isinstance(code, int) else 0)


def _usage_message(exc: Any, args: list[str]) -> str:
    import difflib

    import click

    if isinstance(exc, click.NoSuchOption):
        known = [*PATH_MODES, *(exc.possibilities or ())]
        close = difflib.get_close_matches(exc.option_name, known, 1)
        hint = f"; did you mean {close[0]}?" if close else ""
        return f"no such option {exc.option_name}{hint}"
    message = str(exc.format_message()).rstrip(".")
    if "distributed" in args:
        after = args[args.index("distributed") + 1 :]
        moved = [a for a in after if a in TAKES_VALUE[:6] or a in ("--overwrite", "-s", "-sim")]
        if moved:
            return (
                f"{', '.join(moved)} belong to the run, before `distributed`: "
                "ms_fmk_transplt -i INPUT -o OUTPUT [options] distributed -m MAIN -t MODEL"
            )
    bare = [a for a in args if not a.startswith("-") and os.path.exists(a)]
    if bare and not {"-i", "--input"} & set(args):
        path = bare[0]
        return (
            f"{path}: a path needs a mode: --check {path} (report), --diff or --inplace "
            f"{path}, or -i {path} -o OUTPUT (write a migrated copy)"
        )
    return message
