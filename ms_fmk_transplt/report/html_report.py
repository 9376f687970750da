"""report.html: one self-contained page (inline CSS/JS, no network) for a reviewer.

Open work first (every manual / caveat row, with the code around its line), then the summary
(cards, charts, per folder), the advice (the same advice at several places one entry, its places
listed, ``html_open_work.py``), the changed files (diffs rendered on opening, each changed
line annotated with its rule) and the page of every rule the run used. Everything taken from the
user's code is escaped (``html_assets.esc``) or travels as JSON read with ``textContent``.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from ms_fmk_transplt import __version__
from ms_fmk_transplt.catalogue.rule_pages import page, summary
from ms_fmk_transplt.events import FileStatus, Notice
from ms_fmk_transplt.records import FileRecord, RunOptions, RunResult
from ms_fmk_transplt.report.html_assets import CSS, JS, esc
from ms_fmk_transplt.report.html_diff import file_diff
from ms_fmk_transplt.report.html_open_work import (
    Sources,
    advice_section,
    folder_of,
    open_work_section,
    rule_link,
)
from ms_fmk_transplt.report.log import target_label
from ms_fmk_transplt.report.report_cache import ReportCache
from ms_fmk_transplt.report.statistics import (
    advice_count,
    category_counts,
    caveat_split,
    changes_by_rule,
    file_order,
    folder_counts,
    framework_counts,
    headline_counts,
    needs,
    open_work,
)
from ms_fmk_transplt.safe_names import shown
from ms_fmk_transplt.safety.fs_safety import write_file


def write(
    path: Path, result: RunResult, output_root: Path | None, cache: ReportCache | None = None
) -> None:
    """Write the page; ``output_root`` holds the migrated tree (None for --analyse); ``cache``:
    where an earlier run's page for the same records and files is kept."""
    when = _when(result).encode()
    sources = Sources(result, output_root)
    shown_files = {n.file for f in result.files for n in f.notices} | {
        f.path for f in result.files if f.events and f.status == FileStatus.CHANGED
    }
    used = sorted(
        {e.rule for e in result.events} | {n.rule for f in result.files for n in f.notices}
    )
    key = b""
    if cache is not None:  # the shown files' text and the rule pages the page holds
        key = sources.preload(sorted(shown_files)) + _pages_digest(used)
    page = cache.get_page(path.name, key, when) if cache is not None else None
    if page is None:
        text = _page(result, sources, output_root is not None, used)
        page = text.encode("utf-8")
        if cache is not None and not sources.strays:  # (the key covers every file it read)
            mark = " · ".encode() + when + " · options: ".encode()
            at = page.find(mark, page.find(b'<div class="run">'))
            if at >= 0:
                cache.put_page(path.name, page, key, at + len(" · ".encode()))
    write_file(path, page)


def _page(result: RunResult, sources: Sources, migrated: bool, used: list[str]) -> str:
    notices = [n for f in result.files for n in f.notices]
    files = [f for f in result.files if f.events and f.status == FileStatus.CHANGED]
    diffs = (
        [file_diff(f, sources.lines(f.path, False), sources.lines(f.path, True)) for f in files]
        if migrated
        else []
    )
    diff_of = {f.path: i for i, f in enumerate(files)}
    body = [
        _header(result),
        "<main>",
        _cards(result),
        _nav(notices, files, used),
        open_work_section(notices, sources, migrated, diff_of),
        _charts(result, notices),
        _folders(result),
        advice_section(notices, sources, migrated, diff_of),
        _changed_files(files, diffs) if migrated else _would_change(files),
        _other_notes(notices, migrated),
        _rule_pages(used),
        "</main>",
    ]
    data = json.dumps({"files": diffs}, ensure_ascii=True, separators=(",", ":"))
    data = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(shown(result.project.name))}: ms_fmk_transplt report</title>"
        f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n"
        f'<script type="application/json" id="msft-data">{data}</script>\n'
        f"<script>{JS}</script>\n</body></html>\n"
    )


def _pages_digest(used: list[str]) -> bytes:
    """The digest of the rule pages the page holds (docs/rules: no part of the cache's
    fingerprint, which is the tool's code and tables)."""
    digest = hashlib.sha256()
    for rule_id in used:
        text = (page(rule_id) or "").encode("utf-8")
        digest.update(b"%d|%s|%d|" % (len(rule_id), rule_id.encode(), len(text)) + text)
    return digest.digest()


def _when(result: RunResult) -> str:
    return (result.finished or result.started).strftime("%Y-%m-%d %H:%M")


def _main_command(options: RunOptions) -> str:
    if not options.kit:
        return "distributed"
    side = " (GPU side)" if options.kit_gpu_side and options.kit == "precision" else ""
    return f"kit {options.kit}{side}"


def _header(result: RunResult) -> str:
    options = result.options
    picked = [
        flag
        for flag, on in (
            ("--analyse", options.analyse),
            ("--library", options.library),
            ("--deps " + " ".join(shown(d) for d in options.deps), bool(options.deps)),
            ("-r " + shown(str(options.rule_file)), bool(options.rule_file)),
            ("-s", options.specify_device),
            ("-sim", options.similar),
            (f"{_main_command(options)} -m {shown(result.main_rel or '')}", bool(result.main_rel)),
        )
        if on
    ]
    target = target_label(result)
    when = _when(result)
    run = (
        f"target {esc(target)} · ms_fmk_transplt {esc(__version__)} · {esc(when)}"
        f" · options: {esc(' '.join(picked) or 'none')}"
    )
    return (
        f"<header><h1>{esc(shown(result.project.name))}: migration report</h1>"
        f'<div class="run">{run}</div></header>'
    )


def _cards(result: RunResult) -> str:
    h = headline_counts(result.files)
    b, failed = h.buckets, h.not_migrated
    analyse = result.options.analyse
    cards = [
        ("", h.python, "Python files scanned"),
        ("", h.changed, "would change" if analyse else "changed"),
        ("manual" if failed else "", failed, "not migrated (failed / skipped)"),
        (
            "",
            f"{b.conversion_rate:.1%}",
            f"{'convertible' if analyse else 'converted'} "
            f"({b.converted} of {b.total} CUDA-specific items)",
        ),
        ("", b.changes, "changes proposed" if analyse else "changes (change_list.csv)"),
        ("manual", b.manual, f"{needs(b.manual)} manual work"),
        ("caveat", b.caveat, f"caveats to check ({caveat_split(b)})"),
        ("advice", h.advice, "advice rows"),
    ]
    for c in framework_counts(result.files):  # a run with TensorFlow files: both shares
        rate = f"{c.buckets.conversion_rate:.1%}"
        cards.append(("", c.files, f"{c.name} files ({c.changed} changed, {rate} converted)"))
    items = "".join(f'<div class="card {c}"><b>{esc(v)}</b>{esc(t)}</div>' for c, v, t in cards)
    return f'<div class="cards" id="summary">{items}</div>'


def _nav(notices: list[Notice], files: list[FileRecord], used: list[str]) -> str:
    links = (
        ("open-work-title", f"Open work ({open_work(notices)})"),
        ("summary-title", "Summary"),
        ("folders-title", "Per folder"),
        ("advice-title", f"Advice ({advice_count(notices)})"),
        ("files-title", f"Files ({len(files)})"),
        ("rules-title", f"Rules ({len(used)})"),
    )
    return (
        '<nav class="filters">' + " · ".join(f'<a href="#{a}">{t}</a>' for a, t in links) + "</nav>"
    )


def _bars(counts: Counter[str], link: bool, cls: str = "") -> str:
    items = counts.most_common(15)
    if not items:
        return '<p class="muted">none</p>'
    top, width, row = items[0][1], 260, 20
    parts = []
    for i, (name, count) in enumerate(items):
        y, w = i * row, max(2, round(width * count / top))
        label = f'<text x="0" y="{y + 14}">{esc(name)}</text>'
        if link:
            label = f'<a href="#rule-{esc(name)}">{label}</a>'
        parts.append(
            f'{label}<rect class="bar {cls}" x="250" y="{y + 3}" width="{w}" height="14"/>'
            f'<text x="{256 + w}" y="{y + 14}">{count}</text>'
        )
    height = row * len(items)
    return f'<svg width="600" height="{height}" role="img">{"".join(parts)}</svg>'


def _charts(result: RunResult, notices: list[Notice]) -> str:
    categories = category_counts(notices)
    rules = changes_by_rule(result.events)
    return (
        '<h2 id="summary-title">Summary</h2><div class="cards"><div><h3>Open work by category</h3>'
        f"{_bars(categories, False, 'manual')}</div><div><h3>Changes by rule</h3>"
        f"{_bars(rules, True)}</div></div>"
    )


def _folders(result: RunResult) -> str:
    stats = folder_counts(result.files, folder_of)
    cols = ("files", "changed", "changes", "manual", "caveat", "advice")
    head = "".join(f'<th class="sort num">{c}</th>' for c in cols)
    rows = "".join(
        f"<tr><td>{esc(folder)}</td>"
        + "".join(f'<td class="num">{c[k]}</td>' for k in cols)
        + "</tr>"
        for folder, c in sorted(stats.items())
    )
    return (
        '<h2 id="folders-title">Per folder</h2><table id="folders"><thead><tr>'
        '<th class="sort">folder</th>'
        f"{head}</tr></thead><tbody>{rows}</tbody></table>"
    )


def _changed_files(files: list[FileRecord], diffs: list[dict[str, Any]]) -> str:
    out = [
        f'<h2 id="files-title">Changed files ({len(files)})</h2>',
        '<div class="filters"><label>Diff <select id="diff-mode"><option value="unified">'
        'unified</option><option value="split">side by side</option></select></label>'
        '<span class="muted">Open a file to see its diff; each changed line names its rule.'
        "</span></div>",
    ]
    for i, (f, diff) in enumerate(zip(files, diffs)):
        rules = sorted({e.rule for e in f.events})
        links = " ".join(rule_link(r) for r in rules)
        out.append(
            f'<details class="file" id="file-{i}" data-index="{i}" data-folder="'
            f'{esc(folder_of(f.path))}" data-rules="{esc(" ".join(rules))}"><summary><code>'
            f"{esc(shown(f.path))}</code> · {len(f.events)} change{'s' * (len(f.events) != 1)} · "
            f"{links}{' · diff cut' if diff['cut'] else ''}</summary></details>"
        )
    return "\n".join(out)


def _would_change(files: list[FileRecord]) -> str:
    items = "".join(
        f"<li><code>{esc(shown(f.path))}</code> · {len(f.events)} "
        f"change{'s' * (len(f.events) != 1)} · "
        + " ".join(rule_link(r) for r in sorted({e.rule for e in f.events}))
        + "</li>"
        for f in files
    )
    return (
        f'<h2 id="files-title">Files that would change ({len(files)})</h2><p class="muted">'
        "An analysis writes no "
        f"code: migrate to see the diffs.</p><ul>{items}</ul>"
    )


def _other_notes(notices: list[Notice], migrated: bool) -> str:
    notes = [n for n in notices if not n.category]
    if not notes:
        return ""
    rows = "".join(
        f"<tr><td><code>{esc(shown(n.file))}:{n.lines(migrated)[0]}</code></td>"
        f"<td>{esc(n.severity.value)}</td>"
        f"<td>{esc(n.message.splitlines()[0])}</td><td>{rule_link(n.rule)}</td></tr>"
        for n in sorted(notices, key=lambda n: (file_order(n.file), n.line))
        if not n.category
    )
    return (
        f'<h2>Other notes ({len(notes)})</h2><p class="muted">Warnings and notes of the log '
        "(lines as in the rest of this page).</p><table><thead><tr><th>Location</th>"
        "<th>Level</th><th>Note</th>"
        f"<th>Rule</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _rule_pages(used: list[str]) -> str:
    from markdown_it import MarkdownIt  # a dependency of rich

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    out = [
        f'<h2 id="rules-title">Rules used in this run ({len(used)})</h2>',
        '<p class="muted">Open a rule to read its page (a rule link of this page opens it).</p>',
    ]
    for rule_id in used:  # collapsed: 26 pages opened are 23,000 px of a 1280 px wide window
        text = page(rule_id) or f"# {rule_id}\n\n(no page)"
        out.append(
            f'<details class="rule-page" id="rule-{esc(rule_id)}"><summary><code>'
            f"{esc(rule_id)}</code> · {esc(summary(rule_id))}</summary>{md.render(text)}</details>"
        )
    return "\n".join(out)
