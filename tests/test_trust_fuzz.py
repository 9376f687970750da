"""Issue 27, bounds: generated deep and long code, sized around the depth bound and far beyond
it. Every file ends quickly, migrated or skipped (never failed, never a crash), a skipped file
is left byte for byte, and a real run over such files writes nothing outside its output and
changes no input byte."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from helpers import tables_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ms_fmk_transplt
from ms_fmk_transplt.engine import migrate_source
from ms_fmk_transplt.engine.options import EngineOptions

ROOT = Path(ms_fmk_transplt.__file__).resolve().parent.parent
SIZES = (10, 290, 300, 500, 1000, 5000, 20000)
SECONDS = 10.0  # per file, far above what any of them needs


def _nested_blocks(n: int) -> str:
    """One space per level (CPython stops at 100 levels; the text grows as the square)."""
    n = min(n, 600)
    return "".join(" " * i + f"if torch.cuda.c{i}:\n" for i in range(n)) + " " * n + "pass"


KINDS: dict[str, Callable[[int], str]] = {
    "plus": lambda n: "x = torch.ones(1).cuda()" + " + 1" * n,
    "times": lambda n: "x = torch.cuda.a" + " * b" * n,
    "power": lambda n: "x = torch.cuda.a" + " ** 2" * n,
    "calls": lambda n: "x = torch.cuda" + ".a()" * n,
    "nested_calls": lambda n: "x = " + "f(" * n + "torch.cuda.x" + ")" * n,
    "lambdas": lambda n: "x = " + "lambda: " * n + "torch.cuda.x",
    "comprehensions": lambda n: "x = " + "[y for y in " * n + "torch.cuda.z" + "]" * n,
    "subscripts": lambda n: "x = torch.cuda.a" + "[0]" * n,
    "nested_subscripts": lambda n: "x = " + "a[" * n + "torch.cuda.i" + "]" * n,
    "minus": lambda n: "x = " + "- " * n + "torch.cuda.x",
    "not": lambda n: "x = " + "not " * n + "torch.cuda.x",
    "invert": lambda n: "x = " + "~" * n + "torch.cuda.x",
    "elif": lambda n: (
        "if torch.cuda.a:\n    pass\n" + "".join(f"elif c{i}:\n    x = 'cuda'\n" for i in range(n))
    ),
    "ifexp": lambda n: "x = " + "1 if torch.cuda.c else " * n + "'cuda'",
    "strings": lambda n: "x = 'cuda'" + " + 'a'" * n,
    "implicit_strings": lambda n: "x = torch.device('cuda' " + "'' " * n + ")",
    "lines": lambda n: "x = (torch.ones(1).cuda()\n" + "     + 1\n" * n + ")",
    "blocks": _nested_blocks,
}


def source_of(kind: str, size: int, in_def: bool) -> bytes:
    code = KINDS[kind](size)
    if in_def:
        code = "def f():\n" + "".join(f"    {line}\n" for line in code.splitlines())
    return ("import torch\n" + code + "\ny = torch.ones(1).cuda()\n").encode()


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    kind=st.sampled_from(sorted(KINDS)),
    size=st.sampled_from(SIZES),
    jitter=st.integers(-2, 2),
    in_def=st.booleans(),
    specify_device=st.booleans(),
)
def test_deep_and_long_code_ends_migrated_or_skipped(
    kind: str, size: int, jitter: int, in_def: bool, specify_device: bool
) -> None:
    source = source_of(kind, max(1, size + jitter), in_def)
    options = EngineOptions(specify_device=specify_device)
    start = time.monotonic()
    result = migrate_source(source, "m.py", tables_for(), options)  # raises: a crash
    assert time.monotonic() - start < SECONDS
    assert result.status.name in ("CHANGED", "UNCHANGED", "SKIPPED"), result.status
    if result.status.name != "CHANGED":
        assert result.output == source
    if result.status.name == "SKIPPED":  # parse.limit, or LibCST's own limit on implicit
        # string concatenation (thousands of literals): parse.syntax_error
        assert [n.rule.split(".")[0] for n in result.notices] == ["parse"], result.notices


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
        for p in sorted(root.rglob("*"))
    }


def test_a_run_over_deep_files_writes_only_its_output(tmp_path: Path) -> None:
    src = tmp_path / "p"
    src.mkdir()
    for kind in KINDS:
        for size in (1000, 20000):
            (src / f"{kind}_{size}.py").write_bytes(source_of(kind, size, size > 1000))
    (src / "plain.py").write_bytes(b"import torch\nx = torch.ones(1).cuda()\n")
    before = _snapshot(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    args = ["-q", "-i", str(src), "-o", str(tmp_path / "o"), "-j", "2", "--no-cache"]
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - start < 60
    after = _snapshot(tmp_path)
    written = {p for p in after.keys() - before.keys() if not p.startswith("o")}
    assert not written and {p: after[p] for p in before} == before  # the input untouched
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["p_msft"]
    rows = (tmp_path / "o/p_msft/unsupported_op.csv").read_text(encoding="utf-8")
    assert "failed_file" not in rows
    assert b".npu()" in (tmp_path / "o/p_msft/plain.py").read_bytes()
