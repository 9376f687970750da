"""What ``--check`` / ``--diff`` / ``--inplace`` report, one structure for every output format:
text (``path:line:col: rule message``, as ruff prints), JSON, GitHub workflow commands and
SARIF 2.1.0. Line and column numbers are those of the files as given (the input); a notebook
cell is named ``nb.ipynb#cellN`` and its lines are the cell's (a finding keeps the file and the
cell apart: a ``#`` in a file's own name is never taken for a cell). A migration's SARIF
(``-i/-o --output-format sarif``) holds its open work and advice in the migrated files."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import quote

from ms_fmk_transplt.events import (
    ChangeEvent,
    FileResult,
    Notice,
    Operation,
    cell_location,
    split_cell,
)
from ms_fmk_transplt.records import FileRecord

SCHEMA_VERSION = 1
KINDS = ("change", "manual", "caveat", "advice", "note")
SARIF_LEVEL = {"change": "error", "manual": "error", "caveat": "warning", "advice": "note"}
GITHUB_LEVEL = {"change": "error", "manual": "error", "caveat": "warning"}  # else "notice"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


@dataclass(frozen=True)
class Finding:
    path: str  # the file as given (the notebook, for a finding in one of its cells)
    line: int
    col: int
    end_line: int
    rule: str
    kind: str  # one of KINDS
    message: str
    category: str = ""
    api: str = ""
    tip: str = ""
    end_col: int = 0  # the column after the finding's text on its line (0: not known)
    cell: int | None = None  # a notebook's cell (counted from 0) the lines are lines of

    @property
    def where(self) -> str:
        """The file, or the notebook cell: ``nb.ipynb#cell3``."""
        return self.path if self.cell is None else cell_location(self.path, self.cell)

    @property
    def location(self) -> str:
        return f"{self.where}:{self.line}:{self.col}"

    def as_dict(self) -> dict[str, object]:
        """JSON's finding: ``path`` names the cell as the text lines do (``nb.ipynb#cell3``)."""
        fields = asdict(self)
        del fields["cell"]
        return {**fields, "path": self.where}

    def order(self) -> tuple[str, int, int, int, str]:
        """Sort key: by file, a notebook's cells in order, then line, column and rule."""
        return (self.path, -1 if self.cell is None else self.cell, self.line, self.col, self.rule)


Taken = dict[str, set[int]]  # a line's needles -> the columns findings were given


def _column(
    lines: list[str], line: int, needles: Iterable[str], taken: Taken | None = None
) -> tuple[int, int]:
    """1-based (column, end column: the one after the needle, 0 when none was found) of the first
    needle found on the line (first non-blank character if none); ``taken``: the occurrences of
    each needle earlier findings of the line were given: a finding with the same needle gets the
    next one (two equal literals on a line get a column each)."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    first = (0, 0)
    for needle in needles:
        used = taken.setdefault(needle, set()) if taken is not None else set()
        at = text.find(needle) if needle else -1
        while at >= 0:
            first = first if first[0] else (at + 1, at + 1 + len(needle))
            if at + 1 not in used:
                used.add(at + 1)
                return at + 1, at + 1 + len(needle)
            at = text.find(needle, at + 1)
    if first[0]:
        return first
    return (len(text) - len(text.lstrip()) + 1 if text.strip() else 1), 0


def cell_of(file: str, path: str) -> int | None:
    """The notebook cell an event's or a notice's ``file`` names (``nb.ipynb#cell3``: 3) in the
    file ``path``; None when it names the file itself."""
    notebook, cell = split_cell(file)
    return cell if notebook == path else None


def _cell_lines(source: str, index: int | None) -> list[str]:
    """The lines a finding's line number counts: the file's, or a notebook cell's."""
    if index is None:
        return source.splitlines()
    import json

    try:
        cells = json.loads(source).get("cells", [])
        cell = cells[index]
    except (ValueError, IndexError, AttributeError, KeyError, TypeError, RecursionError):
        return []
    text = cell.get("source", "")
    return ("".join(text) if isinstance(text, list) else str(text)).splitlines()


Where = tuple[str, "int | None", list[str]]  # a finding's file, cell and the lines they count


def of_change(e: ChangeEvent, where: Where, taken: Taken | None = None) -> Finding:
    path, cell, lines = where
    before = e.before.replace("…", "")[:40]
    at = (
        (1, 0) if e.operation == Operation.INSERT else _column(lines, e.start_line, [before], taken)
    )
    end_col = at[1] if e.end_line == e.start_line else 0
    return Finding(
        path,
        e.start_line,
        at[0],
        e.end_line,
        e.rule,
        "change",
        e.message,
        end_col=end_col,
        cell=cell,
    )


def of_notice(n: Notice, where: Where, taken: Taken | None = None) -> Finding:
    path, cell, lines = where
    kind = n.action if n.open_work else "advice" if n.advice else "note"
    leaf = n.api.rsplit(".", 1)[-1] if n.api else ""
    col, end_col = _column(lines, n.line, [n.api, leaf], taken)
    message = n.message.splitlines()[0]
    end_line = max(n.line, n.end_line)
    return Finding(
        path,
        n.line,
        col,
        end_line,
        n.rule,
        kind,
        message,
        n.category,
        n.api,
        n.tip,
        end_col if end_line == n.line else 0,
        cell,
    )


def findings_of(result: FileResult, given: str, source: bytes) -> list[Finding]:
    """The findings of one file, sorted by line and column (input numbering)."""
    text = source.decode("utf-8", errors="replace")
    cache: dict[int | None, list[str]] = {}

    def where(file: str) -> Where:
        cell = cell_of(file, result.path)
        if cell not in cache:
            cache[cell] = _cell_lines(text, cell)
        return given, cell, cache[cell]

    taken: dict[tuple[str, int], Taken] = {}  # per line: the columns given to each needle
    out = [
        of_change(e, where(e.file), taken.setdefault((e.file, e.start_line), {}))
        for e in result.events
    ]
    out += [
        of_notice(n, where(n.file), taken.setdefault((n.file, n.line), {})) for n in result.notices
    ]
    return sorted(out, key=Finding.order)


def findings_as_written(result: FileResult, given: str, output: bytes) -> list[Finding]:
    """The findings of ``result`` that are not its changes (rows, advice, notes), at their lines
    in ``output``, the file as migrated (``--fix`` lists what it left; a migration's SARIF)."""
    notices = [
        dataclasses.replace(n, line=start, end_line=end)
        for n in result.notices
        for start, end in [n.lines(True)]
    ]
    written = FileResult(result.path, result.status, output, [], notices)
    return findings_of(written, given, output)


def open_work_findings(files: Iterable[FileRecord], root: Path) -> list[Finding]:
    """A migration's rows of unsupported_op (manual, caveat) and advice.csv as findings in the
    migrated files under ``root`` (paths relative to ``root``); the changes made are
    change_list.csv's, not findings: nothing is left to do about them."""
    out: list[Finding] = []
    for record in files:
        if not any(n.open_work or n.advice for n in record.notices):
            continue
        base = record.path  # a file (its notices may name its cells)
        try:
            output = (root / base).read_bytes()
        except OSError:
            output = b""
        result = FileResult(base, record.status, output, [], record.notices)
        out += [f for f in findings_as_written(result, base, output) if f.kind != "note"]
    return sorted(out, key=Finding.order)


def statistics(findings: list[Finding]) -> list[str]:
    """``--statistics``: counts per rule, then per file."""
    by_rule = Counter((f.rule, f.kind) for f in findings)
    by_file = Counter(f.path for f in findings)
    width = max((len(r) for r, _ in by_rule), default=4)
    out = [f"{count:>6}  {rule:<{width}}  {kind}" for (rule, kind), count in by_rule.most_common()]
    out += ["", *(f"{count:>6}  {path}" for path, count in by_file.most_common())]
    return out


def github_lines(findings: list[Finding]) -> list[str]:
    """GitHub Actions workflow commands: one annotation per finding."""
    out = []
    for f in findings:
        level = GITHUB_LEVEL.get(f.kind, "notice")
        text = f.message + (f" (tip: {f.tip})" if f.tip else "")
        out.append(
            f"::{level} file={_prop(f.path)},line={f.line},endLine={f.end_line},col={f.col},"
            f"title={_prop(f.rule)}::{_data(text)}"
        )
    return out


def _data(text: str) -> str:
    """A workflow command's message, escaped as GitHub's toolkit does (escapeData)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    """A workflow command's property value (``file=``, ``title=``): escapeProperty."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def uri(path: str) -> str:
    """A SARIF ``artifactLocation.uri``: the POSIX path percent-encoded as RFC 3986 wants
    (``dir with space/x%y.py`` -> ``dir%20with%20space/x%25y.py``; ``/`` kept)."""
    return quote(path, safe="/")


def sarif(
    findings: list[Finding], version: str, summaries: dict[str, str], root_uri: str = ""
) -> dict[str, object]:
    """A SARIF 2.1.0 log (what GitHub code scanning uploads take); ``root_uri``: the folder the
    paths are relative to (``%SRCROOT%``), else they are relative to the working directory."""
    rule_ids = sorted({f.rule for f in findings})
    index = {r: i for i, r in enumerate(rule_ids)}
    rules = [
        {
            "id": r,
            "name": r,
            "shortDescription": {"text": summaries.get(r) or r},
            "help": {
                "text": f"ms_fmk_transplt rule {r} prints the rule's page (docs/rules/{r}.md)"
            },
        }
        for r in rule_ids
    ]
    results = []
    for f in findings:
        if f.kind == "note":
            continue
        physical = {
            "artifactLocation": {
                "uri": uri(f.path),
                **({"uriBaseId": "SRCROOT"} if root_uri else {}),
            },
            "region": {
                "startLine": f.line,
                "startColumn": f.col,
                "endLine": f.end_line,
                **({"endColumn": f.end_col} if f.end_col else {}),
            },
        }
        results.append(
            {
                "ruleId": f.rule,
                "ruleIndex": index[f.rule],
                "level": SARIF_LEVEL[f.kind],
                "message": {"text": f.message + (f" (tip: {f.tip})" if f.tip else "")},
                "locations": [{"physicalLocation": physical}],
            }
        )
    driver = {"name": "ms_fmk_transplt", "version": version, "rules": rules}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": driver},
                **({"originalUriBaseIds": {"SRCROOT": {"uri": root_uri}}} if root_uri else {}),
                "results": results,
            }
        ],
    }
