"""The open-work and advice sections of report.html, and the pieces of markup the rest of the
page shares with them (rule links, names that wrap at their parts, code excerpts).

"Open work (N)" lists the rows of unsupported_op (manual items, then caveats): N is the number
the terminal, the JSON and the workbook give. Advice (advice.csv's rows) has a section of its
own, where the same advice at several places (a fused optimizer for each ``torch.optim.Adam`` of
a zoo of scripts) is one entry with its places listed, collapsed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from ms_fmk_transplt.catalogue.rule_pages import summary
from ms_fmk_transplt.events import Notice
from ms_fmk_transplt.records import RunResult
from ms_fmk_transplt.report.html_assets import esc
from ms_fmk_transplt.report.statistics import cell_file, file_order
from ms_fmk_transplt.safe_names import shown

EXCERPT = 4  # lines shown above and below an open-work row's line


_BREAK_AFTER = re.compile(r"([._/]+)")


def breakable(text: object) -> str:
    """Escaped, with a line break allowed after dots, underscores and slashes (identifiers wrap
    at their parts in a narrow column, never in the middle of a word)."""
    return _BREAK_AFTER.sub(r"\1<wbr>", esc(text))


def rule_link(rule_id: str) -> str:
    shown = breakable(rule_id)  # wraps at its dots and underscores, not inside a word
    return f'<a href="#rule-{esc(rule_id)}" title="{esc(summary(rule_id))}">{shown}</a>'


def folder_of(path: str) -> str:
    parts = PurePosixPath(cell_file(path)).parts
    return shown(parts[0]) if len(parts) > 1 else "(top level)"


class Sources:
    """Input and migrated text of the files the page shows (read once each)."""

    def __init__(self, result: RunResult, output_root: Path | None) -> None:
        self.input_root, self.output_root = result.project.root, output_root
        self.cache: dict[tuple[str, bool], list[str]] = {}
        self.raw: dict[tuple[str, bool], bytes] = {}  # read ahead by ``preload``
        self.strays = False  # a file read that ``preload`` did not

    def preload(self, paths: list[str]) -> bytes:
        """Reads both texts of ``paths`` ahead; returns the digest of all of them (what the
        page cache keys a page by)."""
        digest = hashlib.sha256()
        for path in paths:
            for migrated in (False, True):
                data = self._read(path, migrated)
                self.raw[(path, migrated)] = data
                encoded = path.encode("utf-8", "surrogateescape")
                digest.update(b"%d|%s|%d|%d|" % (len(encoded), encoded, migrated, len(data)))
                digest.update(data)
        return digest.digest()

    def lines(self, path: str, migrated: bool) -> list[str]:
        key = (path, migrated)
        if key not in self.cache:
            data = self.raw.pop(key, None)
            if data is None:
                self.strays = True
                data = self._read(path, migrated)
            self.cache[key] = data.decode("utf-8", errors="replace").splitlines()
        return self.cache[key]

    def _read(self, path: str, migrated: bool) -> bytes:
        root = self.output_root if migrated and self.output_root else self.input_root
        try:
            return (root / path).read_bytes()
        except OSError:  # a notebook cell ("nb.ipynb#cell3"), a removed file
            return b""


def open_work_section(
    notices: list[Notice], sources: Sources, migrated: bool, diff_of: dict[str, int]
) -> str:
    """The open-work table, the rows of unsupported_op (the filters above it sift the advice
    too); ``diff_of`` numbers the files whose diff the page shows."""
    rows = [n for n in notices if n.open_work]
    order = {"manual": 0, "caveat": 1}
    rows.sort(key=lambda n: (order.get(n.action, 2), file_order(n.file), n.line))
    numbering = "migrated file" if migrated else "input file"
    hint = ", follow <i>diff</i> to see the file's changes" if migrated else ""
    out = [
        f'<h2 id="open-work-title">Open work (<span id="open-count">{len(rows)}</span>)</h2>',
        f'<p class="muted">Manual items first, then caveats (advice has a section of its own, '
        f'<a href="#advice-title">Advice</a>). Lines are those of the '
        f"{numbering}; open a location to see the code around it{hint}.</p>",
        _filters(n for n in notices if n.open_work or n.advice),
        '<table id="open-work" data-filterable><colgroup><col class="loc"><col class="api">'
        '<col class="cat"><col class="act"><col class="tip"><col class="rule"></colgroup>'
        "<thead><tr><th>Location</th><th>API</th>"
        "<th>Category</th><th>Action</th><th>What to do</th><th>Rule</th></tr></thead><tbody>",
    ]
    for n in rows:
        out.append(
            f'<tr data-category="{esc(n.category)}" data-rule="{esc(n.rule)}" '
            f'data-folder="{esc(folder_of(n.file))}"><td>'
            f"{_place(n, sources, migrated, diff_of)}</td>"
            f"<td><code>{breakable(n.api)}</code></td><td>{breakable(n.category)}</td>"
            f'<td class="action-{esc(n.action)}">{esc(n.action)}</td><td>{esc(n.tip)}</td>'
            f"<td>{rule_link(n.rule)}</td></tr>"
        )
    out.append("</tbody></table>")
    if not rows:
        out.append("<p>Nothing left to do: no manual items or caveats.</p>")
    return "\n".join(out)


def _to_diff(n: Notice, migrated: bool, diff_of: dict[str, int]) -> str:
    index = diff_of.get(cell_file(n.file)) if migrated else None
    return "" if index is None else f' <a class="to-diff" href="#file-{index}">diff</a>'


def _where(n: Notice, migrated: bool) -> str:
    place = esc(shown(n.file)).replace("/", "/<wbr>")
    return f'{place}<wbr><span class="at">:{n.lines(migrated)[0]}</span>'


def _place(n: Notice, sources: Sources, migrated: bool, diff_of: dict[str, int]) -> str:
    """A row's location, opened onto the code around it."""
    start, end = n.lines(migrated)
    return (
        f"<details><summary><code>{_where(n, migrated)}</code>"
        f"{_to_diff(n, migrated, diff_of)}</summary>"
        f"{excerpt(sources, n.file, start, end, migrated)}</details>"
    )


def advice_groups(notices: Iterable[Notice]) -> list[list[Notice]]:
    """The advice rows, the same advice (rule, API, kind and what it says) at several places
    one group, in the order of their first place."""
    groups: dict[tuple[str, str, str, str], list[Notice]] = {}
    for n in sorted(notices, key=lambda n: (file_order(n.file), n.line)):
        if n.advice:
            groups.setdefault((n.rule, n.api, n.category, n.message), []).append(n)
    return list(groups.values())


def _shared_tip(group: list[Notice]) -> str:
    """What every place of a group is told: the tip they all start with, without a remark of
    one place's own (``(3 uses in this file; ...)``), which its place shows."""
    tips = [n.tip for n in group]
    first, last = min(tips), max(tips)
    size = next((i for i, (a, b) in enumerate(zip(first, last)) if a != b), len(first))
    common = first[:size]
    if len(set(tips)) > 1 and common.count("(") > common.count(")"):
        common = common[: common.rindex("(")]
    return common.rstrip()


def advice_section(
    notices: list[Notice], sources: Sources, migrated: bool, diff_of: dict[str, int]
) -> str:
    """The advice, one entry per group of ``advice_groups``: one place opens onto its code,
    several are a collapsed list."""
    groups = advice_groups(notices)
    rows = sum(len(g) for g in groups)
    out = [
        f'<h2 id="advice-title">Advice (<span id="advice-count">{rows}</span>)</h2>',
        f'<p class="muted">The rows of advice.csv: optional performance and precision work, '
        f"never in the conversion rate; the same advice at several places is one entry "
        f"({len(groups)} entr{'y' if len(groups) == 1 else 'ies'}), open its places to see "
        "them.</p>",
        '<table id="advice" data-filterable><colgroup><col class="loc"><col class="api">'
        '<col class="cat"><col class="tip"><col class="rule"></colgroup>'
        "<thead><tr><th>Places</th><th>API</th><th>Kind</th><th>What to do</th><th>Rule</th>"
        "</tr></thead><tbody>",
    ]
    for group in groups:
        n = group[0]
        folders = sorted({folder_of(g.file) for g in group})
        out.append(
            f'<tr data-category="{esc(n.category)}" data-rule="{esc(n.rule)}" '
            f'data-folder="{esc(folders[0])}" data-folders="{esc(json.dumps(folders))}" '
            f'data-count="{len(group)}"><td>{_places(group, sources, migrated, diff_of)}</td>'
            f"<td><code>{breakable(n.api)}</code></td><td>{breakable(n.category)}</td>"
            f"<td>{esc(_shared_tip(group))}</td><td>{rule_link(n.rule)}</td></tr>"
        )
    out.append("</tbody></table>")
    if not groups:
        out.append("<p>No advice.</p>")
    return "\n".join(out)


def _places(group: list[Notice], sources: Sources, migrated: bool, diff_of: dict[str, int]) -> str:
    if len(group) == 1:
        return _place(group[0], sources, migrated, diff_of)
    tip = _shared_tip(group)
    items = "".join(
        f"<li><code>{_where(n, migrated)}</code>{_to_diff(n, migrated, diff_of)}"
        + (f' <span class="muted">{esc(n.tip[len(tip) :].strip())}</span>' if n.tip != tip else "")
        + "</li>"
        for n in group
    )
    return (
        f'<details class="places"><summary>{len(group)} places</summary>'
        f'<ul class="places">{items}</ul></details>'
    )


def _filters(rows: Iterable[Notice]) -> str:
    rows = list(rows)

    def select(ident: str, label: str, values: Iterable[str]) -> str:
        opts = "".join(f'<option value="{esc(v)}">{esc(v)}</option>' for v in sorted(set(values)))
        choices = f'<option value="">all</option>{opts}'
        return f'<label>{label} <select id="{ident}">{choices}</select></label>'

    return (
        '<div class="filters">'
        + select("f-category", "Category", (n.category for n in rows))
        + select("f-rule", "Rule", (n.rule for n in rows))
        + select("f-folder", "Folder", (folder_of(n.file) for n in rows))
        + '<label>Text <input id="f-text" type="search" placeholder="file, API, tip"></label>'
        "</div>"
    )


def excerpt(sources: Sources, path: str, start: int, end: int, migrated: bool) -> str:
    lines = sources.lines(path, migrated)
    if not lines:
        return '<p class="muted">(code not available)</p>'
    first, last = max(1, start - EXCERPT), min(len(lines), end + EXCERPT)
    spans = [
        f'<span class="{"hit" if start <= i <= end else ""}"><span class="ln">{i}</span>'
        f"{esc(lines[i - 1])}</span>"
        for i in range(first, last + 1)
    ]
    return f'<pre class="excerpt">{"".join(spans)}</pre>'
