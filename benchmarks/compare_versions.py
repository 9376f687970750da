"""Are the outputs byte for byte what another version of the tool wrote? For refactors and
performance work: every file of ``<name>_msft`` is compared, reports included.

    python benchmarks/compare_versions.py --base d916d13 FOLDER [FOLDER ...] [-- OPTIONS]

The base version is checked out (``git worktree``) into a temporary folder and run with this
Python; the working tree is run as it is. Both migrate each FOLDER with the same options (after
``--``, e.g. ``-s`` or ``-sim``; default none) and without cache. Compared per folder: every file
of the two output trees byte for byte, except that the log is compared with its timestamps and
output paths masked, report.html with its date and minute masked (two runs may fall in different
minutes), and ``unsupported_op.xlsx`` cell by cell (the file records its creation time). Prints
one line per folder (files compared, files differing) and each difference; exit 1 if any.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_STAMP = re.compile(rb"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ", re.M)
_SECONDS = re.compile(rb"in \d+\.\d+s")
_MINUTE = re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d")  # report.html says when it was written


def migrate(code: Path, folder: Path, out: Path, options: list[str]) -> int:
    env = {**os.environ, "PYTHONPATH": str(code), "MS_FMK_TRANSPLT_CACHE": "off"}
    cmd = [sys.executable, "-m", "ms_fmk_transplt", "-q", "-i", str(folder), "-o", str(out)]
    done = subprocess.run([*cmd, *options], env=env, cwd=code, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        print(f"  {code.name}: exit {done.returncode}: {done.stderr.strip()}")
    return done.returncode


def _log(path: Path, out: Path) -> bytes:
    data = _STAMP.sub(b"", path.read_bytes())
    return _SECONDS.sub(b"in Xs", data.replace(str(out).encode(), b"<out>"))


def _cells(path: Path) -> list:
    from openpyxl import load_workbook

    book = load_workbook(path)
    return [(ws.title, [[c.value for c in row] for row in ws.iter_rows()]) for ws in book]


def same(a: Path, b: Path, out_a: Path, out_b: Path) -> bool:
    if a.name.startswith("msFmkTranspltlog"):
        return _log(a, out_a) == _log(b, out_b)
    if a.suffix == ".xlsx":
        return _cells(a) == _cells(b)
    if a.name.endswith("report.html"):
        return _MINUTE.sub(b"", a.read_bytes()) == _MINUTE.sub(b"", b.read_bytes())
    if a.is_symlink() or b.is_symlink():
        return a.is_symlink() and b.is_symlink() and os.readlink(a) == os.readlink(b)
    return a.read_bytes() == b.read_bytes()


def _tree(out: Path) -> Path | None:
    """The output folder: ``<name>_msft``, or ``<name>_analysis`` with --analyse."""
    return next(out.glob("*_msft"), None) or next(out.glob("*_analysis"), None)


def compare(folder: Path, base: Path, work: Path, options: list[str]) -> tuple[int, list[str]]:
    out_a, out_b = work / "base" / folder.name, work / "new" / folder.name
    for out in (out_a, out_b):
        shutil.rmtree(out, ignore_errors=True)
    code_a, code_b = migrate(base, folder, out_a, options), migrate(ROOT, folder, out_b, options)
    trees = [_tree(out_a), _tree(out_b)]
    if None in trees or code_a != code_b:
        return 0, [f"exit codes {code_a} / {code_b}, outputs {trees}"]
    tree_a, tree_b = trees
    files_a = {p.relative_to(tree_a) for p in tree_a.rglob("*") if not p.is_dir()}
    files_b = {p.relative_to(tree_b) for p in tree_b.rglob("*") if not p.is_dir()}
    problems = [f"only in the base output: {p}" for p in sorted(files_a - files_b)]
    problems += [f"only in the new output: {p}" for p in sorted(files_b - files_a)]
    for rel in sorted(files_a & files_b):
        if not same(tree_a / rel, tree_b / rel, out_a, out_b):
            problems.append(f"differs: {rel}")
    return len(files_a | files_b), problems


def main() -> int:
    argv = sys.argv[1:]
    options = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, help="git revision of the reference version")
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="msft_compare_"))
    base = work / "base-code"
    subprocess.run(
        ["git", "worktree", "add", "--detach", "-q", str(base), args.base], cwd=ROOT, check=True
    )
    failed = False
    try:
        for folder in args.folders:
            files, problems = compare(folder.resolve(), base, work, options)
            print(f"{folder}: {files} files compared, {len(problems)} differ")
            for problem in problems:
                print(f"  {problem}")
            failed = failed or bool(problems)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
