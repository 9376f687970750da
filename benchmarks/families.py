"""What each rule family costs: one cold ``-j 1`` migration under cProfile, its time split by
rule family and by shared engine piece (``python benchmarks/bench.py --input PATH --families``).

    python benchmarks/families.py PATH          # or through bench.py, as above
    python benchmarks/families.py               # on a synthetic zoo of 1000 files

The run is the tool's own command (``-i PATH -o OUT -j 1 --no-cache -q``) run in this process,
so the one process does everything a run does (discover, the pre-scan, every file, the writes,
the reports). The modules a run starts from are imported before the profiler starts; those a
run imports later, inside the functions that need them (openpyxl for the workbook), are counted
where they are imported. Pieces under 0.5% of the total are summed in one row.

How time is attributed: by *self* time (the time spent in a function's own code, not in the
functions it calls), summed by the module the function is defined in:

* ``ms_fmk_transplt/engine/rules/<family>/...`` → the family (the names of
  ``engine/rules/registry.py``'s ``NAMES``; a folder not among them is shown as ``rules/<it>``);
* another module of ``engine/spans/`` → ``spans/<module>`` (the walker, the span pass, the
  context, module facts, ...); of ``engine/`` → ``engine/<module>`` (scopes, pre-filter, target
  scan, migrate, recorder, ...); ``report/`` → ``report``; ``tables/`` → ``tables``; any other
  module of the package → ``run/<module>`` (pipeline, tree_migration: the writes, discover, ...);
* the stdlib parser (``compile``, which ``ast.parse`` calls) → ``parse (ast.parse)``, wherever it
  is called from;
* any other code outside the package (the stdlib, builtins, LibCST, openpyxl) → the package
  functions that called it, split by the time each call site took (cProfile's caller records),
  followed up through callers outside the package too; what no package caller claims is ``other``.

So a family's seconds are what its own modules cost, with what they call outside the package,
but not the shared engine it calls (the scope queries of ``self.ctx.qname`` are ``engine/scopes``,
not the family's). Profiling slows the run down (about 2x), evenly enough for the shares to hold;
garbage collection is charged to whatever function was running when it started.
"""

from __future__ import annotations

import cProfile
import importlib
import pstats
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "ms_fmk_transplt"
PARSE = "parse (ast.parse)"
SMALL = 0.005  # shared pieces under this share of the total: one row
PRELOAD = (
    "ms_fmk_transplt.commands.launch",
    "ms_fmk_transplt.commands.cli",
    "ms_fmk_transplt.run.pipeline",
    "ms_fmk_transplt.run.tree_migration",
    "ms_fmk_transplt.engine.migrate",
    "ms_fmk_transplt.engine.stages",
    "ms_fmk_transplt.engine.rules.registry",
    "ms_fmk_transplt.report.all_reports",
)

Func = tuple[str, int, str]  # cProfile's key: (file name, line, function name)


def bucket(filename: str, families: frozenset[str]) -> str | None:
    """The bucket of a function by the file it is defined in; None outside the package."""
    parts = Path(filename).parts
    if PACKAGE not in parts:
        return None
    inner = list(parts[len(parts) - 1 - parts[::-1].index(PACKAGE) + 1 :])
    module = inner[-1].removesuffix(".py")
    if inner[:2] == ["engine", "rules"] and len(inner) > 3:
        return inner[2] if inner[2] in families else f"rules/{inner[2]}"
    if inner[:2] == ["engine", "spans"]:
        return f"spans/{module}"
    if inner[:1] == ["engine"]:
        return f"engine/{'/'.join(inner[1:-1] + [module])}"
    if inner[0] in ("report", "tables"):
        return inner[0]
    return f"run/{'/'.join(inner[:-1] + [module])}"


def attribute(stats: dict, families: frozenset[str], rounds: int = 50) -> dict[str, float]:
    """Self seconds per bucket (the module docstring says how)."""
    totals: dict[str, float] = defaultdict(float)
    pending: dict[Func, float] = {}
    for func, (_cc, _nc, tt, _ct, _callers) in stats.items():
        name = bucket(func[0], families)
        if name is not None:
            totals[name] += tt
        elif func[2] == "<built-in method builtins.compile>":
            totals[PARSE] += tt
        elif tt:
            pending[func] = pending.get(func, 0.0) + tt
    for _ in range(rounds):  # outside the package: handed up to the callers
        if not pending:
            break
        moved: dict[Func, float] = defaultdict(float)
        for func, seconds in pending.items():
            callers = stats[func][4]
            weight = sum(record[3] for record in callers.values())
            if not callers or weight <= 0:
                totals["other"] += seconds
                continue
            for caller, record in callers.items():
                share = seconds * record[3] / weight
                name = bucket(caller[0], families)
                if name is not None:
                    totals[name] += share
                else:
                    moved[caller] += share
        pending = moved
    totals["other"] += sum(pending.values())
    return dict(totals)


def profile_run(root: Path, out: Path) -> tuple[dict, float, int]:
    """The profiler's records of one cold ``-j 1`` run of the tool on ``root``, its wall
    seconds and exit code."""
    for module in PRELOAD:
        importlib.import_module(module)
    from ms_fmk_transplt.commands.launch import entry

    argv = sys.argv
    sys.argv = ["ms_fmk_transplt", "-i", str(root), "-o", str(out), "-j", "1", "--no-cache", "-q"]
    profiler = cProfile.Profile()
    code = 0
    start = time.perf_counter()
    try:
        profiler.runcall(entry)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    finally:
        sys.argv = argv
    seconds = time.perf_counter() - start
    return pstats.Stats(profiler).stats, seconds, code  # type: ignore[attr-defined]


def table(totals: dict[str, float], families: tuple[str, ...]) -> list[str]:
    whole = sum(totals.values()) or 1.0
    rows = ["| piece | seconds | share |", "| --- | --- | --- |"]
    ranked = sorted(totals.items(), key=lambda item: -item[1])
    fams = [(k, v) for k, v in ranked if k in families]
    rows += [f"| family {k} | {v:.2f} | {100 * v / whole:.1f}% |" for k, v in fams]
    fam_s = sum(v for _, v in fams)
    rows.append(f"| **all families** | {fam_s:.2f} | {100 * fam_s / whole:.1f}% |")
    shared = [(k, v) for k, v in ranked if k not in families]
    rows += [f"| {k} | {v:.2f} | {100 * v / whole:.1f}% |" for k, v in shared if v >= SMALL * whole]
    rest = [v for _, v in shared if v < SMALL * whole]
    rows.append(
        f"| the {len(rest)} pieces under {100 * SMALL:.1f}% | {sum(rest):.2f} | "
        f"{100 * sum(rest) / whole:.1f}% |"
    )
    rows.append(f"| **profiled total** | {whole:.2f} | 100% |")
    return rows


def family_costs(root: Path | None, files: int = 1000) -> int:
    """Profile one cold run of ``root`` (a synthetic zoo of ``files`` files without one) and
    print the table; exit 0 unless the run failed."""
    sys.path.insert(0, str(ROOT))
    from ms_fmk_transplt.engine.rules.registry import NAMES

    names = NAMES
    work = Path(tempfile.mkdtemp(prefix="msft_families_"))
    try:
        if root is None:
            from synthetic_zoo import generate

            root = generate(work / "zoo", files)
        stats, seconds, code = profile_run(root, work / "out")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    totals = attribute(stats, frozenset(names))
    py = sum(1 for p in root.rglob("*.py") if p.is_file())
    print(
        f"input: {root} — {py} .py; one cold -j 1 run under cProfile: {seconds:.1f}s, exit {code}"
    )
    print("self time by module (benchmarks/families.py), families first, then shared pieces:\n")
    print("\n".join(table(totals, names)))
    return 0 if code in (0, 1) else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(family_costs(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else None))
