"""What ``--check`` / ``--diff`` / ``--inplace`` report, one structure for every output format:
text (``path:line:col: rule message``, as ruff prints), JSON, GitHub workflow commands and
SARIF 2.1.0. Line and column numbers are those of the files as given (the input); a notebook
cell is named ``nb.ipynb#cellN`` and its lines are the cell's. A migration's SARIF
(``-i/-o --output-format sarif``) holds its open work and advice in the migrated files."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from ms_fmk_transplt.events import ChangeEvent, FileResult, Notice, Operation
from ms_fmk_transplt.records import FileRecord
from ms_fmk_transplt.report.statistics import file_order

SCHEMA_VERSION = 1
KINDS = ("change", "manual", "caveat", "advice", "note")
SARIF_LEVEL = {"change": "error", "manual": "error", "caveat": "warning", "advice": "note"}
GITHUB_LEVEL = {"change": "error", "manual": "error", "caveat": "warning"}  # else "notice"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


@dataclass(frozen=True)
class Finding:
    path: str  # the file as given; notebooks: "nb.ipynb#cellN"
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

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


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


def _cell_lines(source: str, path: str) -> list[str]:
    """The lines a finding's line number counts: the file's, or a notebook cell's."""
    if "#cell" not in path:
        return source.splitlines()
    import json

    try:
        cells = json.loads(source).get("cells", [])
        cell = cells[int(path.rsplit("#cell", 1)[1])]
    except (ValueError, IndexError, AttributeError, KeyError, TypeError, RecursionError):
        return []
    text = cell.get("source", "")
    return ("".join(text) if isinstance(text, list) else str(text)).splitlines()


def of_change(e: ChangeEvent, path: str, lines: list[str], taken: Taken | None = None) -> Finding:
    before = e.before.replace("…", "")[:40]
    at = (
        (1, 0) if e.operation == Operation.INSERT else _column(lines, e.start_line, [before], taken)
    )
    end_col = at[1] if e.end_line == e.start_line else 0
    return Finding(
        path, e.start_line, at[0], e.end_line, e.rule, "change", e.message, end_col=end_col
    )


def of_notice(n: Notice, path: str, lines: list[str], taken: Taken | None = None) -> Finding:
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
    )


def findings_of(result: FileResult, given: str, source: bytes) -> list[Finding]:
    """The findings of one file, sorted by line and column (input numbering)."""
    text = source.decode("utf-8", errors="replace")
    cache: dict[str, list[str]] = {}

    def where(file: str) -> tuple[str, list[str]]:
        cell = file.rsplit("#", 1)[1] if "#cell" in file else ""
        path = f"{given}#{cell}" if cell else given
        if path not in cache:
            cache[path] = _cell_lines(text, path)
        return path, cache[path]

    taken: dict[tuple[str, int], Taken] = {}  # per line: the columns given to each needle
    out = [
        of_change(e, *where(e.file), taken.setdefault((e.file, e.start_line), {}))
        for e in result.events
    ]
    out += [
        of_notice(n, *where(n.file), taken.setdefault((n.file, n.line), {})) for n in result.notices
    ]
    return sorted(out, key=lambda f: (file_order(f.path), f.line, f.col, f.rule))


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
        base = record.path.split("#", 1)[0]
        try:
            output = (root / base).read_bytes()
        except OSError:
            output = b""
        result = FileResult(base, record.status, output, [], record.notices)
        out += [f for f in findings_as_written(result, base, output) if f.kind != "note"]
    return sorted(out, key=lambda f: (file_order(f.path), f.line, f.col, f.rule))


def statistics(findings: list[Finding]) -> list[str]:
    """``--statistics``: counts per rule, then per file."""
    by_rule = Counter((f.rule, f.kind) for f in findings)
    by_file = Counter(f.path.split("#", 1)[0] for f in findings)
    width = max((len(r) for r, _ in by_rule), default=4)
    out = [f"{count:>6}  {rule:<{width}}  {kind}" for (rule, kind), count in by_rule.most_common()]
    out += ["", *(f"{count:>6}  {path}" for path, count in by_file.most_common())]
    return out


def github_lines(findings: list[Finding]) -> list[str]:
    """GitHub Actions workflow commands: one annotation per finding."""
    out = []
    for f in findings:
        level = GITHUB_LEVEL.get(f.kind, "notice")
        path = f.path.split("#", 1)[0]
        text = f.message + (f" (tip: {f.tip})" if f.tip else "")
        out.append(
            f"::{level} file={_prop(path)},line={f.line},endLine={f.end_line},col={f.col},"
            f"title={_prop(f.rule)}::{_data(text)}"
        )
    return out


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


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
                "uri": f.path.split("#", 1)[0],
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
