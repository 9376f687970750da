"""The end-of-run summary shown on the terminal (rich)."""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ms_fmk_transplt.events import Notice, Severity
from ms_fmk_transplt.records import RunResult
from ms_fmk_transplt.report import findings, library_api
from ms_fmk_transplt.report.findings import SCHEMA_VERSION
from ms_fmk_transplt.report.log import target_label, target_version
from ms_fmk_transplt.report.statistics import (
    COUNT_LABELS,
    advice_count,
    caveat_split,
    framework_counts,
    framework_line,
    headline_counts,
    libcst_stages,
    library_counts,
    need_manual_work,
    open_work,
    rule_counts,
    run_buckets,
    summary_counts,
    timings,
    top_apis,
)
from ms_fmk_transplt.safe_names import shown


def show(result: RunResult, console: Console) -> None:
    """Details first (they may scroll away), then the reports, then the headline: the last lines
    of a run, visible on an 80x24 terminal."""
    table = Table(title=f"ms_fmk_transplt: {result.project.name}", show_header=True)
    table.add_column("What")
    table.add_column("Count", justify="right")
    for key, value in summary_counts(result).items():
        table.add_row(COUNT_LABELS[key], str(value))
    rules = rule_counts(result)
    if rules:
        table.add_row("changes by rule:", "")
    for rule, n in rules:
        table.add_row(f"  {escape(rule)}", str(n))
    console.print(table)
    top = top_apis(result)
    if top:
        console.print(_top_table(top, console.width))
    for notice in result.notices:
        if notice.severity == Severity.ERROR:
            console.print(
                f"[yellow]{notice.severity.value}[/] {escape(shown(notice.file))}:{notice.line}: "
                f"{escape(notice.message.splitlines()[0])}",
                highlight=False,
                soft_wrap=True,
            )
    for severity, message in result.notes:
        console.print(
            f"[yellow]{severity.value}[/] {escape(message)}", highlight=False, soft_wrap=True
        )
    for line in library_api.summary_lines(result):
        console.print(escape(line), highlight=False, soft_wrap=True)
    names = ", ".join(escape(p.name) for p in result.report_paths.values())
    console.print(f"reports in {escape(shown(result.output_dir))}: {names}", highlight=False)
    for line in headline(result):  # a path is printed whole (the terminal wraps it)
        console.print(line, highlight=False, soft_wrap=line.startswith("review: "))


def _top_table(top: list[tuple[str, str, int]], width: int) -> Table:
    """The APIs with the most open work. An API name wider than its column is wrapped after a
    dot, never inside an identifier (``parallelize_mod``/``ule``); only an identifier wider than
    the column itself is folded. Never cut: two names may differ at the end."""
    apis = Table(title="Top open work (unsupported_op.xlsx, report.html)")
    apis.add_column("API", overflow="fold")
    apis.add_column("Category", overflow="fold")
    apis.add_column("Count", justify="right")
    others = max(len("Category"), *(len(c) for _, c, _ in top))
    others += max(len("Count"), *(len(str(n)) for _, _, n in top))
    room = max(width - others - 10, 12)  # 10: the borders and padding of three columns
    for api, category, count in top:
        apis.add_row(escape("\n".join(dotted_lines(api, room))), category, str(count))
    return apis


def dotted_lines(name: str, width: int) -> list[str]:
    """``name`` in lines of at most ``width`` characters, broken after its dots (a part longer
    than ``width`` alone on its line)."""
    lines = [""]
    for part in re.findall(r"[^.]*\.|[^.]+$", name):
        if lines[-1] and len(lines[-1]) + len(part) > width:
            lines.append("")
        lines[-1] += part
    return lines


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"


def headline(result: RunResult) -> list[str]:
    """The closing lines: what was converted, what is left, where to look (the numbers of
    statistics.py, worded as docs/reports.md's "What the numbers mean")."""
    h = headline_counts(result.files)
    b = h.buckets
    analyse = result.options.analyse
    seconds = ""
    if result.finished is not None:
        seconds = f" in {max((result.finished - result.started).total_seconds(), 0):.1f} s"
    manual = need_manual_work(b.manual)
    manual = f"[bold red]{manual}[/]" if b.manual else manual
    html = result.report_paths.get("html")
    frameworks = framework_counts(result.files)
    changed = f"{h.changed} would change" if analyse else f"{h.changed} changed"
    not_migrated = "could not be migrated" if analyse else "not migrated"
    return [
        f"[bold]{escape(shown(result.project.name))} -> "
        f"{escape(target_label(result))}: {b.items_line(analyse)}[/]",
        f"{manual} · {_n(b.caveat, 'caveat')} to check"
        f"{f' ({caveat_split(b)})' if b.caveat else ''} · "
        f"{_n(h.advice, 'advice row')}",
        f"{_n(h.python, 'Python file')}: {changed} ({_n(b.changes, 'change')}"
        f"), {h.not_migrated} {not_migrated}{seconds}",
        *([framework_line(frameworks)] if frameworks else []),
        *([f"review: {escape(shown(html))}"] if html else []),
    ]


def _programs(result: RunResult) -> dict[str, object]:
    """The programs the run found (program_model.py): each entry point, how it was found, its
    framework and TensorFlow version with what decided it; each TensorFlow file's style and
    why; the files programs of both TensorFlow versions import. None without the model (a
    --merge-shards run)."""
    facts = result.engine.project
    if facts is None:
        return {}
    programs = facts.programs
    return {
        **programs.as_json(),
        "tensorflow_files": {
            path: {"style": style, "why": why}
            for path, (style, why) in sorted(programs.tf_style.items())
        },
    }


def _frameworks(result: RunResult) -> dict[str, object]:
    """Per framework, for a run with TensorFlow files (none otherwise)."""
    counts = framework_counts(result.files)
    if not counts:
        return {}
    return {
        "frameworks": {
            c.name: {
                "python_files": c.files,
                "changed": c.changed,
                "automatic": c.buckets.automatic,
                "caveat": c.buckets.caveat,
                "manual": c.buckets.manual,
                "conversion_rate": round(c.buckets.conversion_rate, 4),
            }
            for c in counts
        }
    }


def _library(result: RunResult) -> dict[str, object]:
    """--library: per package of the input, its public APIs that reach CUDA (none otherwise)."""
    if not result.options.library:
        return {}
    counts = {lib.name: library_counts(lib) for lib in result.library}
    return {
        "library_apis": {
            name: {"apis": total, "need_cuda": cuda, "cpu_path": cpu}
            for name, (total, cuda, cpu) in counts.items()
        }
    }


def as_json(result: RunResult, exit_code: int) -> dict[str, Any]:
    """The machine-readable run summary (--report-format json)."""
    b = run_buckets(result)
    migrated = not result.options.analyse
    return {
        "schema_version": SCHEMA_VERSION,
        "line_numbers": "input" if result.options.analyse else "migrated",
        "input": shown(result.options.input),
        "output": shown(result.output_dir),
        "target_version": target_version(result),
        "exit_code": exit_code,
        "counts": summary_counts(result),
        "changes_by_rule": dict(rule_counts(result)),
        **_frameworks(result),
        **_library(result),
        **_programs(result),
        "buckets": {
            "automatic": b.automatic,
            "caveat": b.caveat,
            "caveat_changes": b.caveat_changes,
            "option_edits": b.option_edits,
            "caveat_rows": b.caveat_rows,
            "manual": b.manual,
            "items": b.total,
            "converted": b.converted,
            "conversion_rate": round(b.conversion_rate, 4),
        },
        "files": [
            {
                "path": shown(f.path),
                "status": f.status.value,
                "changes": len(f.events),
                "unsupported": open_work(f.notices),
                "advice": advice_count(f.notices),
                "open_items": [_item(n, migrated) for n in f.notices if n.open_work or n.advice],
                "warnings": [
                    {
                        "line": n.lines(migrated)[0],
                        "rule": n.rule,
                        "level": n.severity.value,
                        "message": n.message.splitlines()[0],
                    }
                    for n in f.notices
                    if not n.category
                ],
            }
            for f in result.files
            if f.python
        ],
        "reports": {name: shown(path) for name, path in result.report_paths.items()},
        # the run's own warnings (the lines the terminal summary prints after its tables)
        "warnings": [{"level": level.value, "message": text} for level, text in result.notes],
        "timings": timings(result),
        "libcst_stages": libcst_stages(result),
    }


def as_sarif(result: RunResult) -> dict[str, object]:
    """``--output-format sarif`` of a migration: its open work and advice (SARIF 2.1.0), located
    in the migrated files (URIs relative to the output folder, ``%SRCROOT%`` = that folder)."""
    from ms_fmk_transplt import __version__
    from ms_fmk_transplt.catalogue.rule_pages import summary

    found = findings.open_work_findings(result.files, result.output_dir)
    summaries = {f.rule: summary(f.rule) for f in found}  # as --check's SARIF
    root = result.output_dir.resolve().as_uri() + "/"
    return findings.sarif(found, __version__, summaries, root)


def _item(n: Notice, migrated: bool) -> dict[str, object]:
    start, end = n.lines(migrated)
    action = n.action if n.open_work else "advice"
    return {"line": start, "end_line": end, "rule": n.rule, "api": n.api,
            "category": n.category, "action": action, "tip": n.tip}  # fmt: skip
