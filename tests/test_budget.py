"""The CI budget check (benchmarks/budget.py), the floor baseline (benchmarks/bench.py) and the
family attribution (benchmarks/families.py), without timing anything."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench import floor_all  # noqa: E402
from budget import RECORD, build_sample, digest, within  # noqa: E402
from families import PARSE, attribute, bucket  # noqa: E402

FAMILIES = frozenset({"cuda_only", "device_api"})


def test_the_sample_is_the_same_bytes_every_time(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "sample", tmp_path / "b" / "sample"
    one, two = build_sample(first), build_sample(second)
    assert [p.relative_to(first) for p in one] == [p.relative_to(second) for p in two]
    assert digest(first, one) == digest(second, two)
    tops = {p.relative_to(first).parts[0] for p in one}
    assert {"zoo", "projects_0", "projects_1", "rules_0", "rules_1"} <= tops
    assert not any(p.name.endswith(".expected.py") for p in one)
    assert (first / "projects_1/imagenet/main.py").read_bytes() == (
        ROOT / "fixtures/projects/imagenet/main.py"
    ).read_bytes()


def test_the_digest_sees_a_changed_byte(tmp_path: Path) -> None:
    root = tmp_path / "sample"
    files = build_sample(root)
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
