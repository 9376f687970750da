"""Run the tool over folders of real code and check, file by file, what users care about.

    python benchmarks/corpus_sweep.py PATH [PATH ...]

For every folder: hash every file of it, migrate it with the CLI into a temporary directory
(no cache), then check, for each .py file and each code cell of each .ipynb file:

1. a file (cell) that parsed before parses after (cells: `%`/`!` lines masked, `%%` cells skipped);
2. migrating the output again changes nothing (idempotence);
3. byte identity except where change_list.csv says: the input and output are diffed line by line
   (bytes, split on \\n, \\r\\n, \\r only) and compared with the rows of that file (output line
   numbers; a notebook cell's rows are `<nb>#cell<N>` with lines of that cell):
   *unexplained* = an output line changed or was inserted but no row covers it (also: a file
   that is not .py/.ipynb differs, a file is missing from the output or only in it, a notebook's
   JSON differs outside code-cell sources, or a changed raw line of the .ipynb is not a line of
   a code cell, e.g. outputs or metadata re-serialized differently);
   *deleted* = input lines are missing from the output;
   *idle rows* = a row covers only lines that did not change (or names no file of the input);
4. the input tree is unchanged by the run (content, mode and link target of every entry);
5. no CUDA reference the built-in table covers is left in code. This is an independent check on
   the token stream (not on the engine's own CST logic): `torch.cuda.X` with X in torch_npu's
   names, `.cuda(`, `.is_cuda`, and string tokens that are exactly a device spec or 'nccl',
   outside docstrings. Leftovers are listed, they do not fail the sweep.

Prints one markdown table row per folder (problem columns count files, a notebook once;
"parsed before" counts files all of whose code parses; "leftovers" counts occurrences), then
every offending file with its lines, and the leftovers. Exit status
1 when a property (1-4) fails for some file or the CLI did not finish (exit not 0/1).
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import tokenize
from pathlib import Path

import libcst as cst

from ms_fmk_transplt.engine import migrate_source
from ms_fmk_transplt.report.csv_rows import plain
from ms_fmk_transplt.run.notebook import migrate_notebook
from ms_fmk_transplt.tables import load_tables

CODE = (".py", ".ipynb")
REPORT_STEMS = ("change_list", "unsupported_op", "msFmkTranspltlog")


def parses(data: bytes) -> bool:
    try:
        cst.parse_module(data)
        return True
    except Exception:  # noqa: BLE001
        return False


def leftovers(data: bytes) -> list[tuple[int, str]]:
    tables = load_tables()
    found: list[tuple[int, str]] = []
    try:
        tokens = list(tokenize.tokenize(io.BytesIO(data).readline))
    except (tokenize.TokenError, SyntaxError):
        return found
    significant = [t for t in tokens if t.type not in (tokenize.NL, tokenize.COMMENT)]
    for i, tok in enumerate(significant):
        prev = significant[i - 1] if i else None
        nxt = significant[i + 1] if i + 1 < len(significant) else None
        if tok.type == tokenize.NAME and tok.string == "cuda" and prev and prev.string == ".":
            before = significant[i - 2] if i >= 2 else None
            after = significant[i + 2] if i + 2 < len(significant) else None
            if before and before.string == "torch" and nxt and nxt.string == ".":
                if after and after.string in tables.npu_names:
                    found.append((tok.start[0], f"torch.cuda.{after.string}"))
            elif (
                nxt and nxt.string == "(" and not (before and before.string in tables.foreign_roots)
            ):
                found.append((tok.start[0], ".cuda("))
        elif tok.type == tokenize.NAME and tok.string == "is_cuda" and prev and prev.string == ".":
            found.append((tok.start[0], ".is_cuda"))
        elif tok.type == tokenize.STRING:
            docstring = prev is None or prev.type in (
                tokenize.NEWLINE,
                tokenize.INDENT,
                tokenize.DEDENT,
                tokenize.ENCODING,
            )
            if docstring and nxt is not None and nxt.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                continue
            try:
                value = eval(tok.string, {})  # a literal token only  # noqa: S307
            except Exception:  # noqa: BLE001
                continue
            literal = tables.device_strings.literal
            if isinstance(value, str) and (literal.match(value) or value == "nccl"):
                found.append((tok.start[0], repr(value)))
    return found


# -- byte identity: the line diff against the change_list rows ---------------------------------
# Lines are split like Python does (\n, \r\n, \r), on bytes (str.splitlines would also break
# at \x85, a byte of many UTF-8 characters). The engine adds lines only as INSERT rows, so when
# the output minus those lines has the input's line count, lines are compared one to one (exact);
# otherwise difflib decides (it can align repeated lines ambiguously).


def _opcodes(before: bytes, after: bytes):
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    return difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()


def line_diff(
    before: bytes, after: bytes, rows: list[dict[str, str]] = ()
) -> tuple[set[int], set[int]]:
    """(1-based output lines that are new or modified, 1-based input lines deleted).

    A block of input lines replaced by fewer output lines lost lines too: its last ones count
    as deleted."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    inserted = {
        n
        for r in rows
        if r["Operation Type"] == "INSERT"
        for n in range(int(r["Start Line"]), int(r["End Line"]) + 1)
    }
    kept = [n for n in range(1, len(new) + 1) if n not in inserted]
    if len(kept) == len(old):
        moved = set(range(1, len(new) + 1)) - set(kept)
        return moved | {n for i, n in enumerate(kept) if old[i] != new[n - 1]}, set()
    changed: set[int] = set()
    deleted: set[int] = set()
    for tag, i1, i2, j1, j2 in _opcodes(before, after):
        if tag in ("replace", "insert"):
            changed.update(range(j1 + 1, j2 + 1))
        if tag in ("replace", "delete"):
            deleted.update(range(i1 + (j2 - j1) + 1, i2 + 1))
    return changed, deleted


def check_events(before: bytes, after: bytes, rows: list[dict[str, str]]) -> dict:
    """Non-asserting twin of tests/helpers.assert_events_match_diff (lines only)."""
    changed, deleted = line_diff(before, after, rows)
    covered: set[int] = set()
    idle = []
    for r in rows:
        span = set(range(int(r["Start Line"]), int(r["End Line"]) + 1))
        covered |= span
        if not span & changed:
            idle.append((int(r["Start Line"]), r["Rule"]))
    return {"unexplained": sorted(changed - covered), "deleted": sorted(deleted), "idle": idle}


# -- notebooks -----------------------------------------------------------------------------------


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def code_cells(nb: dict) -> dict[int, str]:
    """Code cells the tool migrates (index -> source): not those starting with a %% magic."""
    return {
        i: _source(c)
        for i, c in enumerate(nb.get("cells", []))
        if c.get("cell_type") == "code" and not _source(c).lstrip().startswith("%%")
    }


def masked(text: str) -> bytes:
    """The cell as plain Python: IPython lines (`%magic`, `!shell`) become `pass`."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")):
            lines[i] = line[: len(line) - len(stripped)] + "pass\n"
    return "".join(lines).encode("utf-8")


def _without_code(nb: dict) -> dict:
    cells = [
        {k: v for k, v in c.items() if k != "source"} if c.get("cell_type") == "code" else c
        for c in nb.get("cells", [])
    ]
    return {**nb, "cells": cells}


def notebook_raw_unexplained(before: bytes, after: bytes, nb_after: dict) -> list[int]:
    """Changed raw lines of the .ipynb that are not (JSON strings of) lines of code cells."""
    allowed: set[str] = set()
    for text in code_cells(nb_after).values():
        allowed.add(text)
        allowed.update(text.splitlines(keepends=True))
    out_lines = after.splitlines(keepends=True)
    changed, _ = line_diff(before, after)
    bad = []
    for n in sorted(changed):
        text = out_lines[n - 1].strip().rstrip(b",")
        if text.startswith(b'"source":'):
            text = text[len(b'"source":') :].strip()
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if not (isinstance(value, str) and value in allowed):
            bad.append(n)
    return bad


# -- the sweep -----------------------------------------------------------------------------------


def tree_hashes(folder: Path) -> dict[str, str]:
    """Every entry of the tree (symlinks not followed): its content, mode and link target."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        base = Path(dirpath)
        for name in filenames + [d for d in dirnames if (base / d).is_symlink()]:
            path = base / name
            st = path.lstat()
            if path.is_symlink():
                digest = "link:" + os.readlink(path)
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            found[path.relative_to(folder).as_posix()] = f"{st.st_mode:o}:{digest}"
    return found


def report_file(out_root: Path, stem: str, suffix: str, folder: Path) -> Path:
    """The run's report: `stem.suffix`, or `stem.msft*.suffix` when the input had that name."""
    if not (folder / f"{stem}{suffix}").exists():
        return out_root / f"{stem}{suffix}"
    ours = [p for p in out_root.glob(f"{stem}.msft*{suffix}") if not (folder / p.name).exists()]
    return sorted(ours, key=lambda p: (len(p.name), p.name))[-1]


def _is_report(rel: str, folder: Path) -> bool:
    return "/" not in rel and rel.startswith(REPORT_STEMS) and not (folder / rel).exists()


class Row:
    def __init__(self, repo: str) -> None:
        self.repo = repo
        self.exit = 0
        self.seconds = 0.0
        self.error = ""
        self.counts = dict.fromkeys(
            ("py", "ipynb", "changed", "parse_before", "parse_lost", "not_idempotent"), 0
        )
        # file -> detail, per property
        self.problems: dict[str, dict[str, str]] = {
            k: {}
            for k in ("parse_lost", "not_idempotent", "unexplained", "deleted", "idle", "input")
        }
        self.leftovers: list[tuple[str, int, str]] = []

    def flag(self, prop: str, where: str, detail) -> None:
        if detail:
            self.problems[prop][where] = detail if isinstance(detail, str) else _ranges(detail)


def _ranges(items) -> str:
    items = list(items)
    if items and isinstance(items[0], tuple):  # idle rows: (line, rule)
        return ", ".join(f"{line} {rule}" for line, rule in items[:10]) + (
            f", ... ({len(items)} rows)" if len(items) > 10 else ""
        )
    runs: list[list[int]] = []
    for n in sorted(items):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    text = ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs[:15])
    return "lines " + text + (f",... ({len(items)} lines)" if len(runs) > 15 else "")


def check_py(row: Row, rel: str, before: bytes, after: bytes, rows: list[dict]) -> None:
    row.counts["py"] += 1
    row.counts["changed"] += before != after
    if parses(before):
        row.counts["parse_before"] += 1
        if not parses(after):
            row.counts["parse_lost"] += 1
            row.flag("parse_lost", rel, "does not parse after migration")
        again = migrate_source(after, rel, load_tables()).output
        if again != after:
            row.counts["not_idempotent"] += 1
            row.flag("not_idempotent", rel, _ranges(line_diff(after, again)[0]))
        row.leftovers += [(rel, line, what) for line, what in leftovers(after)]
    found = check_events(before, after, rows)
    row.flag("unexplained", rel, found["unexplained"])
    row.flag("deleted", rel, found["deleted"])
    row.flag("idle", rel, found["idle"])


def check_notebook(row: Row, rel: str, before: bytes, after: bytes, rows_of) -> None:
    row.counts["ipynb"] += 1
    row.counts["changed"] += before != after
    try:
        nb_in, nb_out = json.loads(before), json.loads(after)
    except ValueError:
        row.flag("unexplained", rel, "" if before == after else "unreadable notebook changed")
        return
    if _without_code(nb_in) != _without_code(nb_out):
        row.flag("unexplained", rel, "notebook JSON differs outside code-cell sources")
        return
    row.flag("unexplained", f"{rel} (raw json)", notebook_raw_unexplained(before, after, nb_out))
    cells_in, cells_out = code_cells(nb_in), code_cells(nb_out)
    all_parse, lost = True, False
    for i, text in cells_in.items():
        where = f"{rel}#cell{i}"
        cell_before, cell_after = text.encode("utf-8"), cells_out[i].encode("utf-8")
        if parses(masked(text)):
            if not parses(masked(cells_out[i])):
                lost = True
                row.flag("parse_lost", where, "does not parse after migration")
            row.leftovers += [(where, line, what) for line, what in leftovers(masked(cells_out[i]))]
        else:
            all_parse = False
        found = check_events(cell_before, cell_after, rows_of(where))
        row.flag("unexplained", where, found["unexplained"])
        row.flag("deleted", where, found["deleted"])
        row.flag("idle", where, found["idle"])
    row.counts["parse_before"] += all_parse
    row.counts["parse_lost"] += lost
    again = migrate_notebook(after, rel, load_tables(), None).output
    if again != after:
        row.counts["not_idempotent"] += 1
        row.flag("not_idempotent", rel, _ranges(line_diff(after, again)[0]))


def sweep(folder: Path) -> Row:
    row = Row(folder.name)
    hashes = tree_hashes(folder)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "ms_fmk_transplt", "-q", "--no-cache"]
            + ["-i", str(folder), "-o", tmp],
            capture_output=True,
            text=True,
            check=False,
        )
        row.seconds = time.perf_counter() - start
        row.exit = proc.returncode
        after_run = tree_hashes(folder)
        for path in sorted(set(hashes) | set(after_run)):
            if hashes.get(path) != after_run.get(path):
                row.flag("input", path, "modified" if path in hashes else "created")
        if proc.returncode not in (0, 1):
            row.error = proc.stderr.strip()
            return row
        out_root = Path(tmp) / f"{folder.name}_msft"
        with report_file(out_root, "change_list", ".csv", folder).open(
            encoding="utf-8", newline=""
        ) as fh:
            all_rows = list(csv.DictReader(fh))
        by_file: dict[str, list[dict[str, str]]] = {}
        for r in all_rows:
            by_file.setdefault(plain(r["File"]), []).append(r)
        seen: set[str] = set()

        def rows_of(name: str) -> list[dict[str, str]]:
            seen.add(name)
            return by_file.get(name, [])

        for rel in sorted(hashes):
            src, dst = folder / rel, out_root / rel
            if src.is_symlink() or dst.is_symlink():
                same = dst.is_symlink() and os.readlink(dst) == os.readlink(src)
                row.flag("unexplained", rel, "" if same else "symlink not recreated as it was")
                continue
            if not dst.is_file():
                row.flag("unexplained", rel, "missing from the output")
                continue
            before, after = src.read_bytes(), dst.read_bytes()
            if src.suffix == ".py":
                check_py(row, rel, before, after, rows_of(rel))
            elif src.suffix == ".ipynb":
                check_notebook(row, rel, before, after, rows_of)
            elif before != after:
                row.flag("unexplained", rel, "not code, yet changed")
        for name in sorted(set(by_file) - seen):
            lines = [(int(r["Start Line"]), r["Rule"]) for r in by_file[name]]
            row.flag("idle", name, "rows for no migrated file/cell: " + _ranges(lines))
        for path in out_root.rglob("*"):
            rel = path.relative_to(out_root).as_posix()
            if not path.is_dir() and rel not in hashes and not _is_report(rel, folder):
                row.flag("unexplained", rel, "in the output only")
    return row


HEAD = (
    ("repo", lambda r: r.repo),
    ("exit", lambda r: r.exit),
    ("py files", lambda r: r.counts["py"]),
    ("notebooks", lambda r: r.counts["ipynb"]),
    ("changed", lambda r: r.counts["changed"]),
    ("parsed before", lambda r: r.counts["parse_before"]),
    ("parse lost", lambda r: r.counts["parse_lost"]),
    ("not idempotent", lambda r: r.counts["not_idempotent"]),
    ("unexplained", lambda r: _files(r, "unexplained")),
    ("deleted", lambda r: _files(r, "deleted")),
    ("idle rows", lambda r: _files(r, "idle")),
    ("input changed", lambda r: len(r.problems["input"])),
    ("leftovers", lambda r: len(r.leftovers)),
    ("seconds", lambda r: f"{r.seconds:.2f}"),
)
LABELS = {
    "parse_lost": "parse-lost",
    "not_idempotent": "not-idempotent",
    "unexplained": "unexplained",
    "deleted": "deleted",
    "idle": "idle-rows",
    "input": "input-changed",
}


def _files(row: Row, prop: str) -> int:
    """Files with a problem (a notebook counts once, whatever the number of its cells)."""
    return len({k.split("#cell")[0].split(" (raw json)")[0] for k in row.problems[prop]})


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    rows = [sweep(Path(p).resolve()) for p in argv]
    print("| " + " | ".join(name for name, _ in HEAD) + " |")
    print("|" + "|".join("---" for _ in HEAD) + "|")
    for r in rows:
        print("| " + " | ".join(str(get(r)) for _, get in HEAD) + " |")
    for r in rows:
        for prop, label in LABELS.items():
            for where, detail in r.problems[prop].items():
                print(f"{label} {r.repo}/{where}: {detail}")
        for rel, line, what in r.leftovers:
            print(f"leftover {r.repo}/{rel}:{line}: {what}")
        if r.error:
            print(f"error {r.repo}: {r.error}")
    bad = any(r.exit not in (0, 1) or any(r.problems.values()) for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
