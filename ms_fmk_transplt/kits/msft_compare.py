"""What ``msprobe compare`` (mindstudio-probe 26.2.0) found, read from the CSV it writes:
``<out>/compare_result_[proc<pid>_]<timestamp>.csv``, one row per tensor of each API call of the
target (NPU) dump, matched by name with the golden (bench, "GPU") dump.

Read with the csv module only (msprobe itself needs pandas; the reader does not). Columns relied
on, in both the statistics and the tensor mode: ``NPU Name``, ``Bench Name`` (``N/A`` when the
target's row has no counterpart) and ``Result`` (``pass`` / ``warning`` / ``error``: msprobe's
verdict on whether that API introduced the difference).

msprobe counts a target row without a counterpart as ``pass``, and does not list an API only the
golden dump has: ``Comparison`` counts the results of matched rows only, and lists both kinds of
unmatched rows apart (the golden-only ones when the golden step folder is given).

Written by ``ms_fmk_transplt kit precision`` at the root of the NPU tree, where compare.sh runs
``python msft_compare.py OUT [GOLDEN_STEP_DIR]`` after ``msprobe compare``: the summary line and
the unmatched calls; exit 1 when a row is an error or a call has no counterpart (``warning`` rows
are counted, exit 0). The tool itself never imports it.
"""

from __future__ import annotations

import csv
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

TARGET = "NPU Name"
GOLDEN = "Bench Name"
RESULT = "Result"
NO_MATCH = "N/A"
PASS = "pass"
ERROR = "error"
_PHASES = ("forward", "backward")


@dataclass(frozen=True)
class Comparison:
    """One compare run: ``results`` counts matched rows per Result value; ``target_only`` holds
    the target rows without a golden counterpart, ``golden_only`` the golden dump's API calls
    that no row names."""

    csv_path: Path
    results: Counter[str] = field(default_factory=Counter)
    target_only: tuple[str, ...] = ()
    golden_only: tuple[str, ...] = ()

    @property
    def rows(self) -> int:
        return sum(self.results.values()) + len(self.target_only)

    @property
    def differs(self) -> bool:
        """Any matched row not ``pass``, or anything on one side only."""
        return (
            any(value != PASS for value in self.results)
            or bool(self.target_only)
            or bool(self.golden_only)
        )

    @property
    def failed(self) -> bool:
        """An ``error`` row (msprobe's verdict: that API introduced the difference), or
        anything on one side only; ``warning`` rows alone are not (compare.sh's exit 1)."""
        return self.results[ERROR] > 0 or bool(self.target_only) or bool(self.golden_only)

    def summary(self) -> str:
        counts = ", ".join(f"{value} {count}" for value, count in sorted(self.results.items()))
        verdict = "equal"
        if self.failed:
            verdict = "DIFFERENT"
        elif self.differs:
            verdict = "no error (read the warning rows)"
        return (
            f"{self.rows} rows compared ({counts or 'none matched'}); "
            f"{len(self.target_only)} NPU-only, {len(self.golden_only)} GPU-only: {verdict}"
        )


def result_csv(out_dir: Path) -> Path:
    """The one compare_result_*.csv msprobe wrote into ``out_dir``."""
    found = sorted(Path(out_dir).glob("compare_result_*.csv"))
    if len(found) != 1:
        raise FileNotFoundError(f"{out_dir}: {len(found)} compare_result_*.csv files, not 1")
    return found[0]


def api_of(row_name: str) -> str:
    """The API call a row belongs to: ``Functional.linear.0.forward.input.1`` ->
    ``Functional.linear.0.forward``; ``Module.fc.Linear.forward.0.output.0`` (level L0) ->
    ``Module.fc.Linear.forward.0``: the name up to its phase and the call index after it."""
    parts = row_name.split(".")
    phases = [i for i, part in enumerate(parts) if part in _PHASES]
    if not phases:
        return row_name
    end = phases[-1] + 1
    if end < len(parts) and parts[end].isdigit():
        end += 1
    return ".".join(parts[:end])


def dumped_apis(step_dir: Path) -> list[str]:
    """The API calls of a dump's step folder (``<dump>/step0``: one ``proc*``/``rank*`` folder
    holding dump.json), in dump order."""
    dumps = sorted(Path(step_dir).glob("*/dump.json"))
    if len(dumps) != 1:
        raise FileNotFoundError(f"{step_dir}: {len(dumps)} */dump.json files, not 1")
    data = json.loads(dumps[0].read_text(encoding="utf-8"))["data"]
    return list(data)


def read_comparison(csv_path: Path, golden_step: Path | None = None) -> Comparison:
    """The counts of one compare_result_*.csv (a folder: the one CSV in it)."""
    path = Path(csv_path)
    if not path.is_file():
        path = result_csv(path)
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    missing = {TARGET, GOLDEN, RESULT} - set(rows[0] if rows else {})
    if rows and missing:
        raise ValueError(f"{path}: no column {', '.join(sorted(missing))}")
    matched = [row for row in rows if row[GOLDEN] != NO_MATCH]
    golden_only: tuple[str, ...] = ()
    if golden_step is not None:
        named = {api_of(row[GOLDEN]) for row in matched}
        golden_only = tuple(api for api in dumped_apis(golden_step) if api not in named)
    return Comparison(
        csv_path=path,
        results=Counter(row[RESULT] for row in matched),
        target_only=tuple(row[TARGET] for row in rows if row[GOLDEN] == NO_MATCH),
        golden_only=golden_only,
    )


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print("usage: msft_compare.py COMPARE_OUT_DIR [GOLDEN_STEP_DIR]", file=sys.stderr)
        return 2
    comparison = read_comparison(Path(argv[0]), Path(argv[1]) if len(argv) == 2 else None)
    print(comparison.summary())
    for name in comparison.target_only:
        print(f"  NPU only: {name}")
    for name in comparison.golden_only:
        print(f"  GPU only: {name}")
    return 1 if comparison.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
