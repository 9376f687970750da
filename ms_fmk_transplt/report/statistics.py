"""All the counting of a run, shared by every output (terminal summary, log, workbook, JSON,
report.html, the zoo summary). One definition per number (docs/reports.md, "What the numbers mean"):

* changes: rows of change_list.csv, every edit made (``bookkeeping`` of them are the
  ``import torch_npu`` / adapter import lines, ``# msft: TODO`` comments and a kit's calls the
  tool adds, not constructs of the user's code; ``changes_with_caveat``: the changes whose rule
  carries a caveat);
* open work: rows of unsupported_op.xlsx/.csv, ``manual`` (needs work) or caveat rows (left as
  written: run, but do nothing or differ on the NPU);
* caveats to check: changes with a caveat + caveat rows;
* advice: rows of advice.csv (an advice about the construct of an open-work row is part of that
  row: engine/rules/advice/same_item.py);
* option edits: the changes of ``-r`` and ``distributed -m`` (``option_edit`` rules) on lines
  that are not CUDA-specific: no other counted change, no open-work row on the line they
  change (an insert changes no line): rows of change_list.csv, not items;
* items: the CUDA-specific constructs found = changes - bookkeeping - option edits + open work;
  converted = items - manual; conversion rate = converted / items.

Also: changes by rule, the open work in report order, the phase timings and, for ``--library``,
the input's public APIs that reach CUDA-specific code (rows of library_api.csv)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ms_fmk_transplt.catalogue.rule_catalog import is_bookkeeping, is_option_edit
from ms_fmk_transplt.engine.library_facts import CPU, CUDA, LibraryFacts, Reach
from ms_fmk_transplt.engine.rules import registry
from ms_fmk_transplt.events import (
    ChangeEvent,
    FileStatus,
    Notice,
    Operation,
    Severity,
    split_cell,
)
from ms_fmk_transplt.records import FileRecord, RunResult

# " (line 12)" after each setting a launch file's row names (unsupported.launch_config)
_LINE_NOTE = re.compile(r" \(line \d+\)")
FRAMEWORK_NAMES = {"": "PyTorch / other Python", "tensorflow": "TensorFlow"}


def cell_file(path: str) -> str:
    """The file a reported location is in: ``nb.ipynb#cell3`` -> ``nb.ipynb``; any other path
    as it is (a ``#`` in a file's or folder's name is part of it)."""
    return split_cell(path)[0]


def file_order(path: str) -> tuple[str, int]:
    """Sort key of a reported file: a notebook's cells (``nb.ipynb#cell12``) in cell order."""
    file, cell = split_cell(path)
    return (file, 0 if cell is None else cell + 1)


@dataclass(frozen=True)
class Buckets:
    automatic: int  # changes without a caveat, not counting added imports
    caveat_changes: int  # changes whose rule carries a caveat (marked in change_list.csv)
    caveat_rows: int  # caveat rows of unsupported_op
    manual: int  # manual rows of unsupported_op
    bookkeeping: int = 0  # added import torch_npu / adapter imports, # msft: TODO comments
    option_edits: int = 0  # -r / distributed -m changes on lines that are not CUDA-specific

    @property
    def changes(self) -> int:
        """Rows of change_list.csv."""
        return self.automatic + self.caveat_changes + self.bookkeeping + self.option_edits

    @property
    def caveat(self) -> int:
        """Caveats to check: changes with a caveat and caveat rows."""
        return self.caveat_changes + self.caveat_rows

    @property
    def open_work(self) -> int:
        """Rows of unsupported_op."""
        return self.manual + self.caveat_rows

    @property
    def total(self) -> int:
        """Items: the CUDA-specific constructs found (changed or left as open work)."""
        return self.automatic + self.caveat + self.manual

    @property
    def converted(self) -> int:
        return self.automatic + self.caveat

    @property
    def conversion_rate(self) -> float:
        """Share of the items the tool migrated (with or without a caveat)."""
        return 1.0 if not self.total else self.converted / self.total

    def items_line(self, analyse: bool = False) -> str:
        """``76.2% converted (77 of 101 CUDA-specific items)``"""
        verb = "convertible" if analyse else "converted"
        items = "item" if self.total == 1 else "items"
        return (
            f"{self.conversion_rate:.1%} {verb} "
            f"({self.converted} of {self.total} CUDA-specific {items})"
        )


def need_manual_work(count: int) -> str:
    """``1 needs manual work``, ``0 need manual work``, ``3 need manual work``."""
    return f"{count} {needs(count)} manual work"


def needs(count: int) -> str:
    """The verb after a count: ``1 needs``, ``2 need``."""
    return "needs" if count == 1 else "need"


def caveat_split(b: Buckets) -> str:
    """Where the caveats are: changes (marked in change_list.csv) and rows of unsupported_op."""
    rows = "row" if b.caveat_rows == 1 else "rows"
    changes = "change" if b.caveat_changes == 1 else "changes"
    return f"{b.caveat_changes} {changes}, {b.caveat_rows} {rows}"


def count_buckets(events: Iterable[ChangeEvent], notices: Iterable[Notice]) -> Buckets:
    events = list(events)
    registry.declared({e.rule for e in events})
    own = [e for e in events if not is_bookkeeping(e.rule)]  # not CUDA constructs
    open_work = [n for n in notices if n.open_work]
    edits = [e for e in own if is_option_edit(e.rule)]
    counted = [e for e in own if not is_option_edit(e.rule)]
    if edits:
        cuda = _cuda_spans(counted, open_work)
        counted += [e for e in edits if _changes_one_of(e, cuda)]
    return Buckets(
        bookkeeping=len(events) - len(own),
        option_edits=len(own) - len(counted),
        automatic=sum(1 for e in counted if not e.caveat),
        caveat_changes=sum(1 for e in counted if e.caveat),
        caveat_rows=sum(1 for n in open_work if n.action == "caveat"),
        manual=sum(1 for n in open_work if n.action != "caveat"),
    )


def _cuda_spans(changes: list[ChangeEvent], rows: list[Notice]) -> dict[str, list[tuple[int, int]]]:
    """The CUDA-specific lines (input lines), per file, as (first, last) spans: those of a
    counted change (an insert's line too: its code is CUDA-specific) or of an open-work row.
    Spans, not a set of lines: a row may span a whole file, and a cached record's lines are
    never trusted to be small."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for e in changes:
        spans.setdefault(e.file, []).append((e.start_line, e.end_line))
    for n in rows:
        spans.setdefault(n.file, []).append((n.line, max(n.line, n.end_line)))
    return spans


def _changes_one_of(event: ChangeEvent, spans: dict[str, list[tuple[int, int]]]) -> bool:
    """Whether an option's edit changes one of the lines of ``spans`` (an insert changes
    none)."""
    if event.operation == Operation.INSERT:
        return False
    first, last = event.start_line, event.end_line
    return any(a <= last and first <= b for a, b in spans.get(event.file, ()))


@dataclass(frozen=True)
class Headline:
    """The numbers a run is summed up by (terminal headline, report.html cards)."""

    python: int  # Python files scanned
    changed: int
    not_migrated: int  # failed or skipped (copied unchanged)
    advice: int  # advice rows
    buckets: Buckets


def headline_counts(files: Iterable[FileRecord]) -> Headline:
    """From a run's file records (anything with python, status, events and notices)."""
    files = list(files)
    python = [f for f in files if f.python]
    events = [e for f in files for e in f.events]
    notices = [n for f in files for n in f.notices]
    return Headline(
        python=len(python),
        changed=sum(1 for f in python if f.status == FileStatus.CHANGED),
        not_migrated=sum(1 for f in python if f.status in (FileStatus.FAILED, FileStatus.SKIPPED)),
        advice=sum(1 for n in notices if n.advice),
        buckets=count_buckets(events, notices),
    )


@dataclass(frozen=True)
class FrameworkCount:
    """One framework's share of a run (its Python files, changed files, planning buckets)."""

    name: str
    files: int
    changed: int
    buckets: Buckets


def framework_counts(files: Iterable[FileRecord]) -> list[FrameworkCount]:
    """Per framework, for a run with TensorFlow files (a file's framework: FileRecord's);
    [] for a run without any (its numbers are the run's)."""
    python = [f for f in files if f.python]
    if not any(f.framework for f in python):
        return []
    out = []
    for key, name in FRAMEWORK_NAMES.items():
        mine = [f for f in python if f.framework == key]
        if not mine:
            continue
        events = [e for f in mine for e in f.events]
        notices = [n for f in mine for n in f.notices]
        changed = sum(1 for f in mine if f.status == FileStatus.CHANGED)
        out.append(FrameworkCount(name, len(mine), changed, count_buckets(events, notices)))
    return out


def run_buckets(result: RunResult) -> Buckets:
    return count_buckets(result.events, result.notices)


def open_work(notices: Iterable[Notice]) -> int:
    """Rows of unsupported_op (manual work and caveats)."""
    return sum(1 for n in notices if n.open_work)


def advice_count(notices: Iterable[Notice]) -> int:
    return sum(1 for n in notices if n.advice)


def open_work_notices(result: RunResult) -> list[Notice]:
    """The open work of a run in report order (file, lines, API): the rows of unsupported_op."""
    migrated = not result.options.analyse
    found = [n for n in result.notices if n.open_work]
    return sorted(found, key=lambda n: (file_order(n.file), *n.lines(migrated), n.api))


def category_counts(notices: Iterable[Notice], manual_only: bool = False) -> Counter[str]:
    """Open work per category (only the rows that need manual work with ``manual_only``)."""
    return Counter(
        n.category for n in notices if n.open_work and (not manual_only or n.action != "caveat")
    )


def api_counts(notices: Iterable[Notice]) -> Counter[tuple[str, str]]:
    """Open work per (API, category): rows counted, each under ``counted_api``."""
    return Counter((counted_api(n), n.category) for n in notices if n.open_work)


def counted_api(notice: Notice) -> str:
    """The API a row is counted under in the API tables (the terminal's top open work, the
    workbook's Summary): its OP without the lines a launch file's row names its settings by,
    each setting once (``device: cuda (line 12), device: cuda (line 40)``: ``device: cuda``),
    so that one setting in 9 files is one entry of 9 rows, not 9 entries."""
    if not _LINE_NOTE.search(notice.api):
        return notice.api
    return ", ".join(dict.fromkeys(_LINE_NOTE.sub("", notice.api).split(", ")))


def top_apis(result: RunResult, n: int = 10) -> list[tuple[str, str, int]]:
    counts = api_counts(open_work_notices(result))
    return [(api, cat, c) for (api, cat), c in counts.most_common(n)]


def changes_by_rule(events: Iterable[ChangeEvent]) -> Counter[str]:
    return Counter(e.rule for e in events)


def folder_counts(
    files: Iterable[FileRecord], folder_of: Callable[[str], str]
) -> dict[str, Counter[str]]:
    """Per folder: files, changed, changes, manual, caveat and advice rows."""
    stats: dict[str, Counter[str]] = {}
    for f in files:
        c = stats.setdefault(folder_of(f.path), Counter())
        c["files"] += 1
        c["changed"] += f.status == FileStatus.CHANGED
        c["changes"] += len(f.events)
        for n in f.notices:
            if n.open_work:
                c[n.action] += 1
            elif n.advice:
                c["advice"] += 1
    return stats


# the terminal table's and the log's words for the keys of summary_counts (JSON uses the keys)
COUNT_LABELS = {
    "files_scanned": "files scanned",
    "python_files": "Python files",
    "prefiltered": "pre-filtered (not parsed)",
    "from_cache": "from cache",
    "changed": "changed",
    "unchanged_python": "unchanged Python",
    "copied": "copied (not Python)",
    "skipped": "skipped (cannot parse)",
    "failed": "failed",
    "changes": "changes (change_list.csv rows)",
    "changes_with_caveat": "  with a caveat",
    "bookkeeping": "  added imports / TODO comments",
    "option_edits": "  option edits (-r, distributed), not items",
    "open_work": "open work (unsupported_op rows)",
    "manual": "  need manual work",
    "caveat_rows": "  caveat rows",
    "advice": "advice (advice.csv rows)",
    "warnings": "warnings (log only)",
    "tensorflow_files": "TensorFlow files",
}


def summary_counts(result: RunResult) -> dict[str, int]:
    """The run's counts by key (labels: COUNT_LABELS)."""
    py = [f for f in result.files if f.python]
    b = run_buckets(result)
    tensorflow = sum(1 for f in py if f.framework == "tensorflow")
    return {
        "files_scanned": len(result.files),
        "python_files": len(py),
        "prefiltered": sum(1 for f in py if not f.analysed),
        "from_cache": sum(1 for f in py if f.cached),
        "changed": result.count(FileStatus.CHANGED),
        "unchanged_python": result.count(FileStatus.UNCHANGED, python=True),
        "copied": result.count(FileStatus.UNCHANGED, python=False),
        "skipped": result.count(FileStatus.SKIPPED),
        "failed": result.count(FileStatus.FAILED),
        "changes": b.changes,
        "changes_with_caveat": b.caveat_changes,
        "bookkeeping": b.bookkeeping,
        **({"option_edits": b.option_edits} if b.option_edits else {}),
        "open_work": b.open_work,
        "manual": b.manual,
        "caveat_rows": b.caveat_rows,
        "advice": advice_count(result.notices),
        "warnings": sum(
            1 for n in result.notices if n.severity != Severity.INFO and not n.category
        ),
        **({"tensorflow_files": tensorflow} if tensorflow else {}),
    }


def framework_line(counts: list[FrameworkCount]) -> str:
    """``by framework: PyTorch / other Python 8 files (2 changed, 95.0% converted) · ...``"""
    parts = [
        f"{c.name} {c.files} file{'s' * (c.files != 1)} ({c.changed} changed, "
        f"{c.buckets.conversion_rate:.1%} converted, {c.buckets.manual} manual)"
        for c in counts
    ]
    return "by framework: " + " · ".join(parts)


def rule_counts(result: RunResult) -> list[tuple[str, int]]:
    return sorted(changes_by_rule(result.events).items())


def timings(result: RunResult) -> dict[str, float]:
    """Seconds per phase: discover and reports in the parent process; prefilter, analyse,
    rewrite and write summed over the files (CPU seconds of all processes together)."""
    phases = {"prefilter": 0.0, "analyse": 0.0, "rewrite": 0.0, "write": 0.0}
    for f in result.files:
        for phase, seconds in f.timings.items():
            phases[phase] = phases.get(phase, 0.0) + seconds
    phases["write"] += result.timings.get("write", 0.0)
    out = {
        "discover": result.timings.get("discover", 0.0),
        **phases,
        "reports": result.timings.get("reports", 0.0),
    }
    return {k: round(v, 4) for k, v in out.items()}


def libcst_stages(result: RunResult) -> dict[str, object]:
    """The files a LibCST stage of the options (-r, -sim, distributed) ran on, and how many ran
    each stage."""
    stages = Counter(s for f in result.files for s in f.libcst_stages.split(",") if s)
    files = sum(1 for f in result.files if f.libcst_stages)
    return {"files": files, "stages": dict(stages.most_common())}


_CONSTRUCTORS = ("__init__", "__new__", "__post_init__")  # a class's own row says them


def public_apis(library: LibraryFacts) -> dict[str, Reach]:
    """The library's public APIs that reach CUDA-specific code (rows of library_api.csv): no
    part of the name private (``_x``; a dunder method such as ``__call__`` is public), a class
    as the class (its constructor: not ``C.__init__`` again), a private definition under the
    public name that re-exports it (``pkg.Trainer`` for ``pkg._impl.Trainer``)."""
    exported: dict[str, str] = {}  # private target -> its public name (the shortest)
    for name, target in sorted(library.aliases.items(), key=lambda a: (len(a[0]), a[0])):
        if _public(name) and not _public(target):
            exported.setdefault(target, name)
    out: dict[str, Reach] = {}
    for api, reach in library.reach.items():
        owner, _, last = api.rpartition(".")
        if last in _CONSTRUCTORS and owner in library.reach:
            continue
        if _inherited(api, reach):
            continue
        shown = api if _public(api) else _exported(api, exported)
        if not shown:
            continue
        out.setdefault(shown, reach)
    return dict(sorted(out.items()))


def _inherited(api: str, reach: Reach) -> bool:
    """A method a class inherits (``Model.generate`` runs ``GenerationMixin.generate``): listed
    once, at the class that defines it."""
    first = reach.path[0].split(" (", 1)[0] if reach.path else api
    last = api.rpartition(".")[2]
    return first != api and first.rpartition(".")[2] == last and last not in _CONSTRUCTORS


def _public(dotted: str) -> bool:
    return not any(
        p.startswith("_") and not (p.endswith("__") and len(p) > 4) for p in dotted.split(".")
    )


def _exported(api: str, exported: dict[str, str]) -> str:
    """The public name of ``api`` through the re-export of it or of its module or class; ""."""
    parts = api.split(".")
    for i in range(len(parts), 0, -1):
        name = exported.get(".".join(parts[:i]))
        if name is not None:
            dotted = ".".join([name, *parts[i:]])
            return dotted if _public(dotted) else ""
    return ""


def library_counts(library: LibraryFacts) -> tuple[int, int, int]:
    """The library's public APIs that reach: all, those that need CUDA, those that take the CPU
    path on the NPU."""
    kinds = Counter(r.kind for r in public_apis(library).values())
    return kinds[CUDA] + kinds[CPU], kinds[CUDA], kinds[CPU]
