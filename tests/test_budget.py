"""The CI budget check (benchmarks/budget.py), the floor baseline (benchmarks/bench.py) and the
family attribution (benchmarks/families.py), without timing anything."""

from __future__ import annotations

import ast
import json
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import real_shaped  # noqa: E402
from bench import floor_all  # noqa: E402
from budget import RECORD, digest, within  # noqa: E402
from families import PARSE, attribute, bucket  # noqa: E402

FAMILIES = frozenset({"cuda_only", "device_api"})


def test_the_sample_is_the_same_bytes_every_time(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "sample", tmp_path / "b" / "sample"
    one, two = real_shaped.build(first, ROOT, files=60), real_shaped.build(second, ROOT, files=60)
    assert [p.relative_to(first) for p in one] == [p.relative_to(second) for p in two]
    assert len(one) == 60 and digest(first, one) == digest(second, two)
    for path in one:  # every file is a module Python parses
        ast.parse(path.read_bytes())


def test_the_sample_is_shaped_like_a_real_zoo() -> None:
    cuda, plain = real_shaped.pieces(ROOT)
    rnd = random.Random(real_shaped.SEED)  # as build() draws them, without writing files
    files = [real_shaped.compose(rnd, cuda, plain) for _ in range(real_shaped.FILES)]
    sizes = sorted(map(len, files))
    assert 1_000 <= len(files) <= 2_000 and 10e6 <= sum(sizes) <= 20e6
    assert 8_000 <= statistics.median(sizes) <= 20_000
    assert sizes[0] >= real_shaped.SMALLEST and sizes[-1] <= real_shaped.LARGEST + 20_000
    cuda_lines = [sum(1 for line in f.splitlines() if real_shaped.CUDA.search(line)) for f in files]
    with_cuda = sum(1 for n in cuda_lines if n) / len(files)
    assert 0.25 <= with_cuda <= 0.45  # about a third of the files need changes
    assert sum(1 for n in cuda_lines if n >= 20) >= 50  # some with many CUDA lines
    assert sum(1 for n in cuda_lines if 0 < n <= 5) >= 50  # more with a few


def test_the_pieces_parse_alone_and_plain_ones_name_no_cuda() -> None:
    cuda, plain = real_shaped.pieces(ROOT)
    assert len(cuda) >= 100 and len(plain) >= 50
    for piece in cuda + plain:
        ast.parse(piece)
        assert b"from __future__" not in piece and b"msft: skip-file" not in piece
        assert b"tensorflow" not in piece
    assert not any(real_shaped.CUDA.search(p) for p in plain)


def test_a_future_import_does_not_break_the_concatenation() -> None:
    piece = real_shaped.as_piece(b'"""Doc."""\nfrom __future__ import annotations\nx: int = 1')
    assert piece == b'"""Doc."""\nx: int = 1\n'
    ast.parse(b"y = 2\n" + piece)
    assert real_shaped.as_piece(b"print 'python 2'\n") is None
    assert real_shaped.as_piece(b"import tensorflow as tf\n") is None


def test_the_digest_sees_a_changed_byte(tmp_path: Path) -> None:
    root = tmp_path / "sample"
    files = real_shaped.build(root, ROOT, files=5)
    before = digest(root, files)
    files[0].write_bytes(files[0].read_bytes() + b"\n")
    assert digest(root, files) != before


def test_the_check_fails_only_past_the_margin() -> None:
    assert within(3.0, 2.0, 1.5)  # at the limit
    assert within(1.0, 2.0, 1.5)  # faster than recorded
    assert not within(3.01, 2.0, 1.5)
    assert not within(2.5, 2.0, 1.2)


def test_the_recorded_ratio_says_where_it_comes_from() -> None:
    recorded = json.loads(RECORD.read_text(encoding="utf-8"))
    assert recorded["ratio"] > 1 and recorded["margin"] == 1.5
    assert recorded["commit"] and recorded["date"] and recorded["sample"]["files"] > 0


def test_the_floor_reads_parses_and_copies_every_file(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    (tree / "sub" / "b.py").write_bytes(b"def broken(:\n")  # Python refuses it: still copied
    files = [str(tree / "a.py"), str(tree / "sub" / "b.py")]
    seconds = floor_all(tree, files, 1, tmp_path / "copy")
    assert seconds >= 0
    for name in ("a.py", "sub/b.py"):
        assert (tmp_path / "copy" / name).read_bytes() == (tree / name).read_bytes()


def test_each_module_has_its_bucket() -> None:
    pkg = "/x/ms_fmk_transplt"
    assert bucket(f"{pkg}/engine/rules/cuda_only/cuda_gates.py", FAMILIES) == "cuda_only"
    assert bucket(f"{pkg}/engine/rules/newfam/a.py", FAMILIES) == "rules/newfam"
    assert bucket(f"{pkg}/engine/rules/registry.py", FAMILIES) == "engine/rules/registry"
    assert bucket(f"{pkg}/engine/spans/walker.py", FAMILIES) == "spans/walker"
    assert bucket(f"{pkg}/engine/scopes.py", FAMILIES) == "engine/scopes"
    assert bucket(f"{pkg}/report/html_report.py", FAMILIES) == "report"
    assert bucket(f"{pkg}/tree_migration.py", FAMILIES) == "run/tree_migration"
    assert bucket("/usr/lib/python3.11/ast.py", FAMILIES) is None


def test_time_outside_the_package_goes_to_its_callers() -> None:
    gate = ("/x/ms_fmk_transplt/engine/rules/cuda_only/cuda_gates.py", 1, "gate")
    walk = ("/x/ms_fmk_transplt/engine/spans/walker.py", 1, "walk")
    helper = ("/usr/lib/python3.11/ast.py", 1, "walk")  # called by both, 3:1
    compile_ = ("~", 0, "<built-in method builtins.compile>")
    stats = {
        gate: (1, 1, 1.0, 5.0, {}),
        walk: (1, 1, 2.0, 3.0, {}),
        helper: (4, 4, 4.0, 4.0, {gate: (3, 3, 3.0, 3.0), walk: (1, 1, 1.0, 1.0)}),
        compile_: (1, 1, 0.5, 0.5, {walk: (1, 1, 0.5, 0.5)}),
    }
    totals = attribute(stats, FAMILIES)
    assert totals == {"cuda_only": 4.0, "spans/walker": 3.0, PARSE: 0.5, "other": 0.0}
