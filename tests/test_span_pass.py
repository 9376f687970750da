"""The span pass (engine/spans/) gives exactly what the LibCST pass gives -- migrated bytes,
events and notices, in the same order -- on every file in which it leaves no statement as
written (engine.unmodelled; tests/test_span_declines.py: those are the only differences): on every
fixture (by default and with -s), on mutated fixtures and on generated programs with CUDA code
spliced in. The reference is the LibCST pass as it was: names resolved by LibCST's own
providers."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

from ms_fmk_transplt.engine.cst_pass import cst_pass
from ms_fmk_transplt.engine.guards import LIMIT
from ms_fmk_transplt.engine.migrate import _finish, migrate_source
from ms_fmk_transplt.engine.options import DEFAULT_OPTIONS, EngineOptions
from ms_fmk_transplt.engine.parse import DECODE_ERROR, SYNTAX_ERROR
from ms_fmk_transplt.engine.spans.anchors import anchor_pattern
from ms_fmk_transplt.engine.spans.decline import Unreadable
from ms_fmk_transplt.engine.spans.span_pass import span_pass, supports
from ms_fmk_transplt.engine.spans.unmodelled import UNMODELLED
from ms_fmk_transplt.engine.tree_depth import TooDeep
from ms_fmk_transplt.events import FileResult
from ms_fmk_transplt.tables import load_tables

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures").rglob("*.py"))
# fixtures the span pass reports as files Python cannot read, and the rule of the row; a
# TooDeep (parse.limit) is raised before (the LibCST pass would be no better at either)
REPORTED = {
    "expected/legacy_gpu_msft/legacy_eval.py": SYNTAX_ERROR,
    "expected/toolkit_msft/toolkit/legacy_py2.py": SYNTAX_ERROR,
    "projects/legacy_gpu/legacy_eval.py": SYNTAX_ERROR,
    "projects/toolkit/toolkit/legacy_py2.py": SYNTAX_ERROR,
    # a string literal with an unknown \N{...} name: CPython refuses the file (LibCST reads it)
    "rules/distributed_mode.init/unevaluable_guard": SYNTAX_ERROR,
    "rules/distributed_mode.rank_zero_guard/unevaluable_path": SYNTAX_ERROR,
    "rules/distributed_mode.unsharded_loader/unevaluable_key": SYNTAX_ERROR,
    "rules/parse.decode_error/": DECODE_ERROR,
    "rules/parse.limit/": LIMIT,
    "rules/parse.syntax_error/": SYNTAX_ERROR,
}
# fixtures in which the span pass leaves a statement as written (an engine.unmodelled row), and
# why (any other is a regression)
DECLINED: dict[str, str] = {"rules/engine.unmodelled/": "parentheses around a with item"}
_BARE_CR = re.compile(rb"\r(?!\n)")
SPECIFY_DEVICE = EngineOptions(specify_device=True)


def passes(source: bytes, path: str = "m.py", options: EngineOptions = DEFAULT_OPTIONS):
    """(span result, LibCST result) after the common finishing steps; None if reported or a
    statement was left as written (engine.unmodelled: the LibCST pass migrates it). A file whose
    lines end with a bare CR is compared with the LibCST pass over its twin with \\n line ends
    (the LibCST pass misses rules that read lines of the raw bytes)."""
    tables = load_tables()
    try:
        span = span_pass(source, path, tables, options)
    except Unreadable:
        return None
    if any(n.rule == UNMODELLED for n in span.notices):
        return None
    twin = source
    if _BARE_CR.search(source):
        if b"\n" in source:
            return None  # mixed line ends: no twin to compare with
        twin = source.replace(b"\r", b"\n")
    reference = cst_pass(twin, path, tables, options, libcst_names=True)
    assert not isinstance(reference, FileResult), "LibCST refused what the stdlib parser read"
    finished = _finish(twin, path, reference)
    if twin is not source:
        finished.output = finished.output.replace(b"\n", b"\r")
    return _finish(source, path, span), finished


def assert_same(
    source: bytes, path: str = "m.py", options: EngineOptions = DEFAULT_OPTIONS
) -> bool:
    got = passes(source, path, options)
    if got is None:
        return False
    span, reference = got
    assert span.output == reference.output
    assert span.events == reference.events
    assert span.notices == reference.notices
    return True


def _expected_decline(rel: str) -> str | None:
    for prefix, reason in {**DECLINED, **REPORTED}.items():
        if rel.startswith(prefix):
            return reason
    return None


@pytest.mark.parametrize("case", FIXTURES, ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_same_as_libcst_on_fixtures(case: Path) -> None:
    rel = str(case.relative_to(ROOT / "fixtures"))
    reason = _expected_decline(rel)
    if reason is None:
        assert assert_same(case.read_bytes(), case.name), f"{rel}: declined"
        return
    _assert_not_passed(case, reason, DEFAULT_OPTIONS)


def _assert_not_passed(case: Path, reason: str, options: EngineOptions) -> None:
    """The span pass stops on ``case`` as expected: too deep, reported (parse.*) or declined."""
    if reason == LIMIT:
        with pytest.raises(TooDeep):
            span_pass(case.read_bytes(), case.name, load_tables(), options)
    elif reason in REPORTED.values():
        with pytest.raises(Unreadable) as caught:
            span_pass(case.read_bytes(), case.name, load_tables(), options)
        assert caught.value.rule == reason
    else:
        notices = span_pass(case.read_bytes(), case.name, load_tables(), options).notices
        assert any(n.rule == UNMODELLED and reason in n.message for n in notices)


@pytest.mark.parametrize("variant", ["bom", "cr", "crlf", "latin-1", "gbk"])
def test_encodings_and_line_ends_as_python_reads_them(variant: str) -> None:
    """A file with a byte order mark, bare CR or CRLF line ends, or a coding cookie (non-ASCII
    text in comments) migrates in the span pass into the bytes the LibCST pass writes: the
    file's own encoding, line ends and BOM."""
    compared = 0
    for case in FIXTURES:
        rel = str(case.relative_to(ROOT / "fixtures"))
        if _expected_decline(rel) is not None or ".expected" in rel or rel.startswith("expected"):
            continue
        source = case.read_bytes().replace(b"\r\n", b"\n")
        if variant == "bom":
            source = b"\xef\xbb\xbf" + source
        elif variant in ("cr", "crlf"):
            source = source.replace(b"\n", b"\r" if variant == "cr" else b"\r\n")
        elif variant in ("latin-1", "gbk"):
            try:
                text = source.decode("utf-8")
                text = text.replace("# ", "# é " if variant == "latin-1" else "# 中文 ")
                source = f"# -*- coding: {variant} -*-\n{text}".encode(variant)
            except (UnicodeDecodeError, UnicodeEncodeError):
                continue
        compared += assert_same(source, case.name)
    assert compared > 100


@pytest.mark.parametrize("case", FIXTURES, ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_same_as_libcst_on_fixtures_with_specify_device(case: Path) -> None:
    """-s runs in the span pass (specify_device_spans.py): its rewrites interleave with the
    built-in ones on the same node, as in the LibCST pass (the Before of set_device(1) shows
    torch.npu; the Before of .cuda(1) shows MSFT_NPU_DEVICE)."""
    rel = str(case.relative_to(ROOT / "fixtures"))
    reason = _expected_decline(rel)
    if reason is not None:
        _assert_not_passed(case, reason, SPECIFY_DEVICE)
        return
    assert assert_same(case.read_bytes(), case.name, SPECIFY_DEVICE), f"{rel}: declined"


def test_specify_device_runs_take_the_span_pass() -> None:
    assert supports(SPECIFY_DEVICE)
    assert not supports(EngineOptions(specify_device=True, similar=True))
    case = ROOT / "fixtures/rules/specify_device.device/hardcoded.py"
    result = migrate_source(case.read_bytes(), case.name, load_tables(), SPECIFY_DEVICE)
    assert result.status.name == "CHANGED" and result.declined == ""
    # so the LibCST pass's size limit (5 MiB) no longer skips a large file run with -s
    small_limit = EngineOptions(specify_device=True, max_cst_bytes=100)
    assert len(case.read_bytes()) > 100
    result = migrate_source(case.read_bytes(), case.name, load_tables(), small_limit)
    assert result.status.name == "CHANGED" and b"MSFT_NPU_DEVICE" in result.output


def test_large_files_in_pieces_give_the_same_result(monkeypatch) -> None:
    """A file larger than CHUNK_BYTES is walked piece by piece (engine/spans/chunks.py): with
    pieces of a few hundred bytes, every fixture still migrates exactly as in one piece."""
    from ms_fmk_transplt.engine.spans import chunks

    cases = [
        p for p in FIXTURES if _expected_decline(str(p.relative_to(ROOT / "fixtures"))) is None
    ]
    whole = {p: passes(p.read_bytes(), p.name) for p in cases}
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 300)
    several = 0
    for path in cases:
        source = path.read_bytes()
        several += len(list(chunks.pieces(source))) > 1
        span, _ = passes(source, path.name)
        expected = whole[path][0]
        assert (span.output, span.events, span.notices) == (
            expected.output,
            expected.events,
            expected.notices,
        ), path
    assert several > 20
    # -s keeps what it found over the pieces (hard-coded indices, where a rank is read)
    tables = load_tables()
    for path in [p for p in cases if "specify_device" in str(p) or "/projects/" in str(p)]:
        source = path.read_bytes()
        monkeypatch.setattr(chunks, "CHUNK_BYTES", 300)
        pieces = _finish(source, path.name, span_pass(source, path.name, tables, SPECIFY_DEVICE))
        monkeypatch.undo()
        whole = _finish(source, path.name, span_pass(source, path.name, tables, SPECIFY_DEVICE))
        assert (pieces.output, pieces.events, pieces.notices) == (
            whole.output,
            whole.events,
            whole.notices,
        ), path


def test_every_table_entry_is_anchored() -> None:
    """A statement the span pass does not walk must hold nothing a rule acts on: every
    unsupported API is reachable only through a word of the anchor pattern, however it was
    imported (the part after the import alias, or the alias's path, holds an anchor)."""
    tables = load_tables()
    anchors = anchor_pattern(tables)
    for key, entry in tables.unsupported.apis.items():
        if entry.when is not None:
            continue
        parts = key.split(".")
        for cut in range(1, len(parts) + 1):
            path, rest = ".".join(parts[:cut]), ".".join(parts[cut:])
            assert anchors.search(path.encode()) or anchors.search(rest.encode()), (key, cut)
    for name in tables.unsupported.env:
        assert anchors.search(name.encode()), name
    for module in tables.unsupported.modules:
        assert anchors.search(module.split(".")[0].encode()), module
    # integer device indices are arguments of device calls: the call is the anchor
    for name in tables.int_device.device_calls:
        assert anchors.search(name.encode()), name


def test_parenthesized_nodes_keep_libcst_snippets() -> None:
    source = (
        b"import torch\n"
        b"y = (\n    x.cuda()\n)\n"
        b"z = f((torch.cuda.current_device()), (local_rank))\n"
        b"w = (t).to((rank))\n"
        b"v = torch.device((rank))\n"
        b'u = ("cuda" "nccl")\n'
    )
    assert assert_same(source)


def test_concatenations_and_fstrings() -> None:
    source = (
        b"import torch\n"
        b'a = ("cuda" ":0")\n'
        b'b = "x" f"{y.cuda()} cuda" "CUDA_VISIBLE_DEVICES"\n'
        b"c = x.to(f\"{'cuda'}\")\n"
        b'd = f"cuda:{rank}" if ok else "cpu"\n'
        b'e = t.to("cu" "da")\n'
    )
    assert assert_same(source)


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from test_properties import mutated  # noqa: E402

GENERATED = int(os.environ.get("MSFT_FUZZ_EXAMPLES", "60"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_same_as_libcst_on_mutations(source: str) -> None:
    data = source.encode("utf-8")
    try:
        ast.parse(data)
    except SyntaxError:
        return
    assert_same(data)


hypothesmith = pytest.importorskip("hypothesmith")
from spliced_programs import spliced  # noqa: E402


@settings(max_examples=GENERATED, deadline=None, suppress_health_check=list(HealthCheck))
@given(spliced(hypothesmith.from_node()))
def test_same_as_libcst_on_generated_programs(source: str) -> None:
    data = source.encode("utf-8")
    try:
        ast.parse(data)
    except (SyntaxError, ValueError):
        return
    assert_same(data)


@pytest.mark.parametrize(
    "call",
    [
        "profile(use_cuda=False)",
        "profile( use_cuda=False, )",
        "profile(a , use_cuda=False)",
        "profile(a, use_cuda=False , )",
        "profile(use_cuda = False ,  b=2)",
        "profile(\n    a,  # x\n    use_cuda=False,  # y\n)",
        "profile((a), use_cuda=(False))",
        "profile(*xs, use_cuda=False, **kw)",
        "profile(use_cuda=a or b)",
        "profile(use_cuda=(a if b else c))",
        "profile(use_cuda=await z)",
    ],
)
def test_use_cuda_removed_or_computed(call: str) -> None:
    call = call.replace("\n", "\n    ")
    source = (
        "import torch\nfrom torch.autograd.profiler import profile\n"
        f"async def f(a, b, c, xs, z, kw):\n    with {call} as p:\n        pass\n"
    ).encode()
    assert assert_same(source)


@pytest.mark.parametrize(
    "statement",
    [
        "from  torch.cuda  import  nvtx as n ,  synchronize as s",
        "from torch.cuda import (\n    synchronize,  # a\n    nvtx,  # b\n)",
        "x = 1; from torch.cuda import synchronize, nvtx",
        "from torch.cuda import synchronize, nvtx  ;  y = 2",
        "from torch.cuda import synchronize, nvtx ;",
        "if True:\n    from torch.cuda import synchronize, nvtx",
        "from torch.cuda import synchronize, \\\n    nvtx",
    ],
)
def test_from_import_split_between_npu_and_cuda(statement: str) -> None:
    assert assert_same(f"import os\n{statement}\nprint(1)\n".encode())
