"""The bad-input matrix: every row runs the real command line and checks the exit code, the exact
one-line error (or the log line of a file handled with a warning) and that nothing was lost:
the input tree is unchanged, and a failed run leaves no output behind.

    python tests/test_bad_input_matrix.py     prints the table of observed lines (for docs/trust.md)
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import without_root_powers

CUDA = b"import torch\nx = torch.ones(1).cuda()\n"


@dataclass
class Row:
    name: str
    setup: Callable[[Path], list[str]]  # builds the input under tmp, returns the arguments
    exit: int
    stderr: str = ""  # the exact stderr, "{t}" standing for the temporary folder
    log: str = ""  # a substring of the run's log (runs that finish)
    output: tuple[str, bytes] | None = None  # (file in p_msft, bytes it must contain)
    permissions: bool = False  # needs permission bits to apply (see without_root_powers)


def project(t: Path, files: dict[str, bytes] | None = None) -> Path:
    src = t / "p"
    src.mkdir(exist_ok=True)
    for name, data in (files or {"train.py": CUDA}).items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    return src


def run_args(t: Path, files: dict[str, bytes] | None = None, *extra: str) -> list[str]:
    return ["-i", str(project(t, files)), "-o", str(t / "o"), *extra]


def rules(t: Path, text: str) -> list[str]:
    (t / "rules.json").write_text(text, encoding="utf-8")
    return run_args(t, None, "-r", str(t / "rules.json"))


def existing_output(t: Path) -> list[str]:
    (t / "o" / "p_msft").mkdir(parents=True)
    return run_args(t)


def unreadable_file(t: Path) -> list[str]:
    args = run_args(t, {"train.py": CUDA, "secret.py": CUDA})
    (t / "p" / "secret.py").chmod(0)
    return args


def unreadable_folder(t: Path) -> list[str]:
    args = run_args(t, {"train.py": CUDA, "locked/b.py": CUDA})
    (t / "p" / "locked").chmod(0)
    return args


def read_only_output(t: Path) -> list[str]:
    (t / "o").mkdir()
    (t / "o").chmod(0o555)
    return run_args(t)


def uncreatable_output(t: Path) -> list[str]:
    args = read_only_output(t)
    return [*args[:-1], str(t / "o" / "runs" / "today")]


def symlinks(t: Path) -> list[str]:
    args = run_args(t)
    (t / "common").mkdir()
    (t / "common" / "shared.py").write_bytes(CUDA)
    os.symlink("train.py", t / "p" / "alias.py")  # inside: kept, points at the migrated file
    os.symlink("../common/shared.py", t / "p" / "shared.py")  # outside: kept, warned
    os.symlink("..", t / "p" / "loop")  # a loop: never followed
    return args


def deep_folders(t: Path) -> list[str]:
    args = run_args(t)
    (t / "p" / Path(*["d"] * DEPTH) / "deep.py").parent.mkdir(parents=True)
    (t / "p" / Path(*["d"] * DEPTH) / "deep.py").write_bytes(CUDA)
    return args


def long_output_path(t: Path) -> list[str]:
    """A path that fits in the input but not in the output (``<out>/.p_msft.partial-<pid>/``
    before it is longer than ``<t>/p/``)."""
    args = run_args(t)
    rel = Path(*["a" * 200] * 19)
    base = t.parent if t.name == "fresh" else t  # (the same names in the rebuilt input)
    name = "b" * (4085 - len(os.fsencode(base / "p" / rel)) - 1)
    (t / "p" / rel).mkdir(parents=True)
    (t / "p" / rel / name).write_bytes(CUDA)  # 4,085 bytes with the input folder before it
    return args


def huge_rules(t: Path) -> list[str]:
    entry = '{"old_name": "a", "new_name": "b"}'
    return rules(t, '{"rules": {"FuncNameModifyRule": [' + ",".join([entry] * 320_000) + "]}}")


PY2 = b"import torch\nprint 'devices', torch.cuda.device_count()\n"
NEW_SYNTAX = (
    b"import torch\n\n\ndef first[T](xs: list[T]) -> T:\n    return xs[0]\n\n\n"
    b"type Batch = list[torch.Tensor]\n"
    b'dev = f"{f\'{"cuda"}\'}"\n'
    b"y = first([torch.ones(1).cuda()])\n"
)
LATIN1 = "# entraîner sur le GPU\nimport torch\nx = torch.ones(1).cuda()\n".encode("latin-1")
BIG = CUDA + b"w = [0.0, 1.0, 2.0, 3.0]\n" * 42_000
BIG_LATIN1 = b"# -*- coding: latin-1 -*-\n" + CUDA + b"w = [0.0, 1.0, 2.0, 3.0]\n" * 252_000
BIG_SIM = BIG_LATIN1 + b"from apex.normalization import FusedLayerNorm\nnorm = FusedLayerNorm(8)\n"
DEEP = b"import torch\nx = " + b"(" * 3000 + b"torch.ones(1).cuda()" + b")" * 3000 + b"\n"
TABS = b"import torch\nif True:\n\tx = torch.ones(1).cuda()\n"
ILL_TYPED = json.dumps({"rules": {"FuncNameModifyRule": [{"old_name": 3, "new_name": "x"}]}})
NON_ASCII = "mon dossier/entraîner modèle.py"
DEPTH = 200  # folders nested in one another (the walk stops at 128)
E = "ms_fmk_transplt: error: {t}"


# syntax newer than the Python that runs the tool is reported (Python >= 3.12 reads it; a PEP 695
# statement is then left as written by the span pass)
NEWEST_SYNTAX_OUTCOME = (
    {"log": "analysed new.py: 3 change(s)", "output": ("new.py", b"first([torch.ones(1).npu()])")}
    if sys.version_info >= (3, 12)
    else {
        "log": f"new.py:4: [parse.syntax_error] cannot parse: needs a newer Python than "
        f"3.{sys.version_info[1]} to be parsed (Python 3.{sys.version_info[1]}: "
        + (
            "expected '('): run the tool with a newer Python; copied unchanged"
            * (sys.version_info[:2] == (3, 11))
        ),
        "output": ("new.py", NEW_SYNTAX),
    }
)


def files(**named: bytes) -> Callable[[Path], list[str]]:
    return lambda t: run_args(t, {k.replace("__", "."): v for k, v in named.items()})


ROWS = [
    Row("missing input path", lambda t: ["-i", str(t / "nope"), "-o", str(t / "o")], 2,
        f"{E}/nope: input does not exist"),
    Row("input neither .py file nor folder",
        lambda t: ["-i", str(project(t, {"notes.txt": b"x"}) / "notes.txt"), "-o", "o"], 2,
        f"{E}/p/notes.txt: input must be a folder or a .py file"),
    Row("output inside the input", lambda t: ["-i", str(project(t)), "-o", str(t / "p/out")], 2,
        f"{E}/p/out: output must not be inside the input folder {{t}}/p"),
    Row("input equal to output", lambda t: ["-i", str(project(t)), "-o", str(t / "p")], 2,
        f"{E}/p: output must not be the input folder itself"),
    Row("existing <name>_msft without --overwrite", existing_output, 2,
        f"{E}/o/p_msft: already exists; pass --overwrite to replace it"),
    Row("unreadable file", unreadable_file, 2,
        f"{E}/p/secret.py: cannot read this file (Permission denied)", permissions=True),
    Row("unreadable folder", unreadable_folder, 2,
        f"{E}/p/locked: cannot read this folder (Permission denied)", permissions=True),
    Row("read-only output folder", read_only_output, 2,
        f"{E}/o: output folder is not writable", permissions=True),
    Row("output folder that cannot be created", uncreatable_output, 2,
        f"{E}/o/runs/today: cannot create the output folder (Permission denied)", permissions=True),
    Row("symlinked files and folders (inside, outside, loop)", symlinks, 0,
        log="shared.py: symbolic link kept as is, not followed: -> ../common/shared.py leads "
        "outside the input", output=("alias.py", b".npu()")),
    Row("non-UTF-8 file without a coding cookie", files(fr__py=LATIN1), 0,
        log="fr.py:1: [parse.decode_error] cannot decode: line 1: byte 0xee is not valid utf-8 "
        "(no coding cookie: add e.g. '# -*- coding: latin-1 -*-' as the first line, or save as "
        "UTF-8); copied unchanged", output=("fr.py", LATIN1)),
    Row("NUL bytes", files(nul__py=b"import torch\x00\nx = torch.ones(1).cuda()\n"), 0,
        log="nul.py:1: [parse.syntax_error] cannot parse: invalid Python 3 syntax (source code "
        "string cannot contain null bytes); copied unchanged"),
    Row("a file larger than --max-file-size", lambda t: run_args(t, {"gen.py": BIG}, "--max-file-"
        "size", "0.5"), 0, log="gen.py:1: [parse.limit] larger than 0.5 MiB (1.0 MiB); copied "
        "unchanged (raise --max-file-size to migrate it)", output=("gen.py", BIG)),
    Row("a 6 MB file in latin-1 (coding cookie)", files(gen__py=BIG_LATIN1), 0,
        log="analysed gen.py: 2 change(s)", output=("gen.py", b"import torch_npu\n")),
    Row("a 6 MB file -sim acts on (the LibCST stage)",
        lambda t: run_args(t, {"gen.py": BIG_SIM}, "-sim"), 0,
        log="gen.py:1: [parse.limit] larger than 5 MiB (6.0 MiB) for the LibCST stage of -sim; "
        "copied unchanged (raise --max-file-size to migrate it)", output=("gen.py", BIG_SIM)),
    Row("deeply nested expressions", files(deep__py=DEEP), 0,
        log="deep.py:1: [parse.limit] brackets nested deeper than 200 levels (CPython: too "
        "many nested parentheses); copied unchanged", output=("deep.py", DEEP)),
    Row("Python 2 syntax", files(py2__py=PY2), 0,
        log="py2.py:2: [parse.syntax_error] cannot parse: invalid Python 3 syntax (Missing "
        "parentheses in call to 'print'. Did you mean print(...)?); copied unchanged",
        output=("py2.py", PY2)),
    Row("newest syntax (PEP 695, nested f-strings)", files(new__py=NEW_SYNTAX), 0,
        **NEWEST_SYNTAX_OUTCOME),
    Row("empty file", files(empty__py=b""), 0,
        log="analysed empty.py: nothing to migrate", output=("empty.py", b"")),
    Row("file with only comments", files(c__py=b"# x.cuda()\n"), 0,
        log="analysed c.py: nothing to migrate", output=("c.py", b"# x.cuda()\n")),
    Row("BOM", files(bom__py=b"\xef\xbb\xbf" + CUDA), 0,
        log="analysed bom.py: 2 change(s)", output=("bom.py", b"\xef\xbb\xbfimport torch\n")),
    Row("tabs", files(tab__py=TABS), 0,
        log="analysed tab.py: 2 change(s)", output=("tab.py", b"\tx = torch.ones(1).npu()\n")),
    Row("path names with spaces and non-ASCII", lambda t: run_args(t, {NON_ASCII: CUDA}), 0,
        log=f"analysed {NON_ASCII}: 2 change(s)", output=(NON_ASCII, b".npu()")),
    Row("folders nested 200 levels deep", deep_folders, 0,
        log="d/" * 128 + "d: a folder nested more than 128 levels deep: not read and not copied",
        output=("train.py", b".npu()")),
    Row("a path too long for the output (PATH_MAX)", long_output_path, 0,
        log="inside the input: with the input or output folder before it, longer than the "
        "system allows (4096 bytes): not read and not copied", output=("train.py", b".npu()")),
    Row("malformed rule JSON", lambda t: rules(t, '{"rules": '), 2,
        f"{E}/rules.json: line 1 column 11: invalid JSON (Expecting value)"),
    Row("huge rule JSON", huge_rules, 2, f"{E}/rules.json: rule file is larger than 10 MiB"),
    Row("ill-typed rule JSON", lambda t: rules(t, ILL_TYPED), 2,
        f"{E}/rules.json: $.rules.FuncNameModifyRule[0].old_name: must be string, got 3"),
    Row("distributed -m outside the input",
        lambda t: [*run_args(t, {"train.py": CUDA, "../x.py": CUDA}), "distributed", "-m",
                   str(t / "p/../x.py")], 2,
        f"{E}/p/../x.py: distributed -m: the file is outside the input {{t}}/p"),
    Row("distributed -m missing file", lambda t: [*run_args(t), "distributed", "-m", "nope.py"], 2,
        "ms_fmk_transplt: error: nope.py: distributed -m: no such file (looked in {t}/p and here)"),
]  # fmt: skip


def tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_symlink():
            digest.update(os.readlink(path).encode())
        elif path.is_file() and os.access(path, os.R_OK):
            digest.update(path.read_bytes())
    return digest.hexdigest()


def observe(row: Row, t: Path) -> tuple[subprocess.CompletedProcess, Path, list[str]]:
    """Runs one row in t (from a neutral working directory)."""
    prefix: tuple[str, ...] = ()
    if row.permissions:
        found = without_root_powers(t)
        if found is None:
            pytest.skip("cannot make permission bits apply here (root without setpriv)")
        prefix = found
    args = row.setup(t)
    before = listing(t / "o")
    done = subprocess.run(
        [*prefix, sys.executable, "-m", "ms_fmk_transplt", "-q", *args],
        capture_output=True,
        text=True,
        cwd=t,
        timeout=300,
        env={**os.environ, "MS_FMK_TRANSPLT_CACHE": "off"},
    )
    return done, t / "o" / "p_msft", before


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def unlock(t: Path) -> None:
    for path in [t, *t.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755)


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_bad_input(row: Row, tmp_path: Path) -> None:
    try:
        _check(row, tmp_path)
    finally:
        unlock(tmp_path)


def _check(row: Row, t: Path) -> None:
    done, out, before = observe(row, t)
    src = t / "p"
    assert done.returncode == row.exit, done.stderr
    expected = row.stderr.replace("{t}", str(t))
    assert done.stderr == (expected + "\n" if expected else ""), done.stderr
    if row.exit == 2:
        # nothing written: no output tree, no staging folder, not even an empty log
        assert listing(t / "o") == before
    else:
        log = (out / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
        assert row.log in log, log
        if row.output:
            name, data = row.output
            assert data in (out / name).read_bytes() if data else not (out / name).stat().st_size
    # the input tree is exactly what the setup made: rebuild it elsewhere and compare
    fresh = t / "fresh"
    fresh.mkdir()
    row.setup(fresh)
    unlock(t)
    unlock(fresh)
    if (fresh / "p").exists():
        assert tree_hash(src) == tree_hash(fresh / "p")


def main() -> None:
    """Prints the matrix with the line each row produced (exit code, stderr or log line)."""
    import re
    import tempfile

    print("| input | exit | observed |")
    print("| --- | --- | --- |")
    for row in ROWS:
        with tempfile.TemporaryDirectory() as tmp:
            t = Path(tmp)
            try:
                done, out, _ = observe(row, t)
            except pytest.skip.Exception as exc:
                print(f"| {row.name} | skipped | {exc} |")
                continue
            finally:
                unlock(t)
            line = done.stderr.strip().replace(tmp, "…")
            if not line and (out / "msFmkTranspltlog.txt").exists():
                log = (out / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
                hit = next((x for x in log.splitlines() if row.log and row.log in x), "")
                line = re.sub(r"^\S+ \S+ ", "", hit).replace(tmp, "…")
            print(f"| {row.name} | {done.returncode} | `{line}` |")


if __name__ == "__main__":
    main()
