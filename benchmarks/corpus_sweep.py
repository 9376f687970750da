"""Run the tool over folders of real code and check, file by file, what users care about.

    python benchmarks/corpus_sweep.py PATH [PATH ...]

For every folder: migrate it with the CLI into a temporary directory, then for each .py file
check that (1) a file that parsed before parses after, (2) migrating the output again changes
nothing (idempotence), (3) no CUDA reference the built-in table covers is left in code. (3) is an
independent check on the token stream (not on the engine's own CST logic): `torch.cuda.X` with X
in torch_npu's names, `.cuda(`, `.is_cuda`, and string tokens that are exactly a device spec or
'nccl', outside docstrings. Prints one table row per folder and the leftovers found.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tempfile
import time
import tokenize
from pathlib import Path

import libcst as cst

from ms_fmk_transplt.engine import migrate_source
from ms_fmk_transplt.tables import load_tables


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
            if isinstance(value, str) and (tables.device_literal.match(value) or value == "nccl"):
                found.append((tok.start[0], repr(value)))
    return found


def sweep(folder: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "ms_fmk_transplt", "-q", "-i", str(folder), "-o", tmp],
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.perf_counter() - start
        out_root = Path(tmp) / f"{folder.name}_msft"
        row = {
            "repo": folder.name,
            "exit": proc.returncode,
            "seconds": seconds,
            "py": 0,
            "changed": 0,
            "parse_before": 0,
            "parse_lost": 0,
            "not_idempotent": 0,
            "leftovers": [],
        }
        if proc.returncode not in (0, 1):
            row["error"] = proc.stderr.strip()
            return row
        for src in sorted(folder.rglob("*.py")):
            if src.is_symlink() or not src.is_file():
                continue
            rel = src.relative_to(folder)
            before, after = src.read_bytes(), (out_root / rel).read_bytes()
            row["py"] += 1
            row["changed"] += before != after
            if parses(before):
                row["parse_before"] += 1
                if not parses(after):
                    row["parse_lost"] += 1
                again = migrate_source(after, rel.as_posix())
                if again.output != after:
                    row["not_idempotent"] += 1
                row["leftovers"] += [
                    (rel.as_posix(), line, what) for line, what in leftovers(after)
                ]
        return row


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    rows = [sweep(Path(p).resolve()) for p in argv]
    head = (
        "repo",
        "exit",
        "py files",
        "changed",
        "parsed before",
        "parse lost",
        "not idempotent",
        "leftovers",
        "seconds",
    )
    print(" | ".join(head))
    print(" | ".join("---" for _ in head))
    for r in rows:
        print(
            " | ".join(
                str(x)
                for x in (
                    r["repo"],
                    r["exit"],
                    r["py"],
                    r["changed"],
                    r["parse_before"],
                    r["parse_lost"],
                    r["not_idempotent"],
                    len(r["leftovers"]),
                    f"{r['seconds']:.2f}",
                )
            )
        )
    for r in rows:
        for rel, line, what in r["leftovers"]:
            print(f"leftover {r['repo']}/{rel}:{line}: {what}")
        if "error" in r:
            print(f"error {r['repo']}: {r['error']}")
    bad = any(r["parse_lost"] or r["not_idempotent"] or r["exit"] not in (0, 1) for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
