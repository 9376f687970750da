"""Shared assertions: recorded events must describe exactly the real diff."""

from __future__ import annotations

import csv
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from ms_fmk_transplt.events import ChangeEvent, Operation
from ms_fmk_transplt.tables import Tables, load_tables


def _lines(data: bytes) -> list[str]:
    # Split the bytes (on \n, \r\n, \r only, as Python does), then latin-1 maps every byte to
    # one character: works for any encoding, keeps CRLF visible. str.splitlines would also split
    # on \x85 and \x0c, which occur inside UTF-8 characters (✅ is E2 9C 85).
    return [line.decode("latin-1") for line in data.splitlines(keepends=True)]


def _kept_lines(before: bytes, after: bytes, events: list[ChangeEvent]) -> list[int] | None:
    """The output line of each input line when the output is the input with the engine's
    INSERT lines added (its only way to add lines): exact, no diff heuristics. None when the
    line counts say otherwise (then difflib decides)."""
    inserted = {
        n
        for e in events
        if e.operation == Operation.INSERT
        for n in range(e.out_start_line, e.out_end_line + 1)
    }
    kept = [n for n in range(1, len(_lines(after)) + 1) if n not in inserted]
    return kept if len(kept) == len(_lines(before)) else None


def changed_output_lines(
    before: bytes, after: bytes, events: list[ChangeEvent] | None = None
) -> set[int]:
    """1-based line numbers of the output that are new or modified."""
    kept = _kept_lines(before, after, events) if events is not None else None
    if kept is not None:
        old, new = _lines(before), _lines(after)
        moved = set(range(1, len(new) + 1)) - set(kept)
        return moved | {n for i, n in enumerate(kept) if old[i] != new[n - 1]}
    # difflib can align repeated lines ambiguously (three identical imports, a line inserted
    # after the first): only a fallback
    matcher = difflib.SequenceMatcher(a=_lines(before), b=_lines(after), autojunk=False)
    changed: set[int] = set()
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            changed.update(range(j1 + 1, j2 + 1))
    return changed


def deleted_input_lines(
    before: bytes, after: bytes, events: list[ChangeEvent] | None = None
) -> set[int]:
    if events is not None and _kept_lines(before, after, events) is not None:
        return set()
    matcher = difflib.SequenceMatcher(a=_lines(before), b=_lines(after), autojunk=False)
    return {
        i + 1
        for tag, i1, i2, _j1, _j2 in matcher.get_opcodes()
        if tag == "delete"
        for i in range(i1, i2)
    }


def assert_events_match_diff(
    before: bytes, after: bytes, events: Iterable[ChangeEvent], where: str = ""
) -> None:
    events = list(events)
    changed = changed_output_lines(before, after, events)
    assert not deleted_input_lines(before, after, events), f"{where}: lines were deleted"
    covered: set[int] = set()
    out_lines = _lines(after)
    for e in events:
        span = set(range(e.out_start_line, e.out_end_line + 1))
        covered |= span
        assert span & changed, f"{where}: event {e.rule} at {e.out_start_line} changed nothing"
        if e.operation == Operation.INSERT:
            inserted = out_lines[e.out_start_line - 1 : e.out_end_line]
            # the inserted text, indented like the block it went into
            assert [x.strip() for x in inserted] == [x.strip() for x in e.after.split("\n")], where
        else:
            assert e.before != e.after, where
    assert changed <= covered, (
        f"{where}: changed lines without an event: {sorted(changed - covered)}"
    )


def read_change_list(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def rows_as_events(rows: list[dict[str, str]], file: str) -> list[ChangeEvent]:
    return [
        ChangeEvent(
            file=r["File"],
            start_line=0,
            end_line=0,
            rule=r["Rule"],
            operation=Operation(r["Operation Type"]),
            message=r["Message"],
            before=r["Before"],
            after=r["After"],
            out_start_line=int(r["Start Line"]),
            out_end_line=int(r["End Line"]),
        )
        for r in rows
        if r["File"] == file
    ]


def tables_for(case: Path | None = None) -> Tables:
    """What a run hands the engine: the tables of a fixture case's target version (the newest
    by default); the package loads them once per run, at its entry points."""
    from ms_fmk_transplt.commands.rule_docs import fixture_version

    return load_tables(fixture_version(case) if case else "")


def case_options(case: Path):
    """Engine options of a fixture case, from its optional <case>.options.json sidecar."""
    from ms_fmk_transplt.commands.rule_docs import fixture_options

    return fixture_options(case, Path(__file__).resolve().parent.parent)[0]


def run_case(case: Path, source: Path | None = None):
    """The result of a fixture case, or of ``source`` with the case's options
    (ms_fmk_transplt/commands/rule_docs.py: sidecar options and faults)."""
    from ms_fmk_transplt.commands.rule_docs import run_case as run

    return run(case, Path(__file__).resolve().parent.parent, source)


def without_root_powers(t: Path) -> tuple[str, ...] | None:
    """A command prefix under which permission bits apply, or None where that is impossible.
    As root (CI), setpriv drops the capabilities that bypass permission checks
    (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) for the tool's process only."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    prefix = (setpriv, "--bounding-set=-dac_override,-dac_read_search", "--")
    probe = t / "probe"
    probe.write_text("x")
    probe.chmod(0)
    denied = subprocess.run([*prefix, "cat", str(probe)], capture_output=True).returncode != 0
    probe.unlink()
    return prefix if denied else None


_WRITTEN_AT = re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d")  # report.html says when it was written


def comparable(path: Path) -> bytes:
    """A file of an output as two runs of the same input must write it: report.html without the
    minute it was written at (two runs may fall in different minutes)."""
    data = path.read_bytes()
    return _WRITTEN_AT.sub(b"<minute>", data) if path.name == "report.html" else data


def tool(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The real command in a subprocess (``python -m ms_fmk_transplt ARGS``), output as text."""
    return subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


STANDIN = Path(__file__).resolve().parent / "standin"


def standin_env(log: Path, **more: str) -> dict[str, str]:
    """The environment of a run under the CPU stand-ins (tests/standin first on PYTHONPATH), its
    calls recorded into ``log`` (MSFT_STANDIN_LOG); no CUDA device, no fault switch unless
    ``more`` sets one."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "CUDA_VISIBLE_DEVICES", "MSFT_STANDIN_SKEW")
    }
    env.update(PYTHONPATH=str(STANDIN), MSFT_STANDIN_LOG=str(log), **more)
    return env


def standin_calls(log: Path) -> list[dict[str, object]]:
    """The calls the stand-ins recorded (none when nothing was written)."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]


def run_checked(
    argv: list[str], env: dict[str, str], cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``argv`` in a subprocess, output as text, its exit code left to the caller."""
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
