"""engine/scopes.py resolves names as LibCST's QualifiedNameProvider did for the engine: for
every name, attribute and call of a file, the qualified name the engine's ``qname`` would use
is the same (fixtures, hand-picked scoping cases, generated programs; on real code
benchmarks/corpus_sweep.py has the same comparison)."""

from __future__ import annotations

import ast
import os
import unicodedata
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from ms_fmk_transplt.engine import scope_model as S
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.cst_names import scoped_children
from ms_fmk_transplt.engine.scopes import Scopes
from ms_fmk_transplt.engine.spans.chunks import pieces
from ms_fmk_transplt.rule_docs import fixture_parsed
from ms_fmk_transplt.tables import load_tables

ROOT = Path(__file__).resolve().parent.parent
Key = tuple[str, int, int, int, int]


def libcst_names(source: bytes) -> dict[Key, str | None]:
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    ctx = MigrationContext("m.py", module, load_tables())
    ctx.bind(wrapper)
    positions = wrapper.resolve(PositionProvider)
    out: dict[Key, str | None] = {}

    class Visit(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.Import, cst.ImportFrom)):
                ctx.import_depth += 1
            if isinstance(node, (cst.Name, cst.Attribute, cst.Call)):
                p = positions[node]
                key = (type(node).__name__, p.start.line, p.start.column, p.end.line, p.end.column)
                out.setdefault(key, ctx.qname(node))
            return True

        def on_leave(self, node: cst.CSTNode) -> None:
            if isinstance(node, (cst.Import, cst.ImportFrom)):
                ctx.import_depth -= 1

    wrapper.module.visit(Visit())
    return out


def _qname(scopes: Scopes, node, scope, in_import: bool, top) -> str | None:
    names = set() if in_import else scopes.qualified_names(node, scope, top)
    if names:
        ordered = sorted(names, key=lambda q: (q[1] != S.IMPORT, q[0]))
        for name, _ in ordered:
            if name == "torch" or name.startswith("torch."):
                return name
        return ordered[0][0]
    dotted = (
        S.full_name(node) if isinstance(node, (ast.Name, ast.Attribute)) and not in_import else None
    )
    return dotted if dotted and (dotted == "torch" or dotted.startswith("torch.")) else None


def _top(node, parent: dict[int, ast.AST]):
    cur, top = node, node if isinstance(node, ast.Attribute) else None
    while isinstance(cur, ast.Attribute):
        cur = cur.value
    if not isinstance(cur, ast.Name):
        return None
    above = parent.get(id(node))
    while above is not None and not isinstance(above, (ast.Call, ast.stmt)):
        if isinstance(above, ast.Attribute):
            top = above
        above = parent.get(id(above))
    return top


def scopes_names(source: bytes) -> dict[Key, str | None]:
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)

    def col(line: int, offset: int) -> int:
        return len(lines[line - 1][:offset].decode("utf-8")) if line <= len(lines) else offset

    parent = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    scopes = Scopes(tree, walrus=b":=" in source)
    out: dict[Key, str | None] = {}

    def walk(node, scope, in_import: bool) -> None:
        in_import = in_import or isinstance(node, (ast.Import, ast.ImportFrom))
        if isinstance(node, (ast.Name, ast.Attribute, ast.Call)):
            start, end = (
                col(node.lineno, node.col_offset),
                col(node.end_lineno, node.end_col_offset),
            )
            key = (type(node).__name__, node.lineno, start, node.end_lineno, end)
            out.setdefault(key, _qname(scopes, node, scope, in_import, _top(node, parent)))
        for child, child_scope in scoped_children(node, scope, scopes):
            walk(child, child_scope, in_import)

    walk(tree, scopes.global_scope, False)
    return out


def assert_same_names(source: bytes) -> int:
    """Identifiers compare as Python compares them: NFKC-normalized (``𝒮`` is ``S``; the stdlib
    parser normalizes them, LibCST keeps what is written)."""
    expected = {
        k: None if v is None else unicodedata.normalize("NFKC", v)
        for k, v in libcst_names(source).items()
    }
    got = scopes_names(source)
    common = [k for k in expected if k in got]
    assert [(k, got[k]) for k in common] == [(k, expected[k]) for k in common]
    return len(common)


CASES = {
    "aliases": "import torch as th\nimport torch.cuda as tc\nfrom torch import cuda\n"
    "th.cuda.synchronize(); tc.current_device(); cuda.is_available()\n",
    "dotted import": "import torch.cuda\nimport torch.distributed\ntorch.cuda.synchronize()\n"
    "torch.distributed.get_rank()\nx = torch.cuda.current_device().real\n",
    "shadowed": "import torch\ndef f(torch):\n    return torch.cuda.x\n"
    "def g():\n    cuda = 1\n    return cuda\n",
    "later binding": "x = cuda.a\nfrom torch import cuda\ny = cuda.b\n",
    "class bodies": "import torch\nclass C:\n    torch = 1\n    def m(self):\n"
    "        return torch.cuda\n    y = [torch for _ in range(2)]\n",
    "comprehensions": "import torch\nz = [t.cuda() for t in xs if t.is_cuda]\n"
    "w = {k: torch.cuda for k in ks for torch in k}\n",
    "global and nonlocal": "def f():\n    global torch\n    import torch\n"
    "def g():\n    th = 1\n    def h():\n        nonlocal th\n        import torch as th\n"
    "    return th.cuda\nprint(torch.cuda)\n",
    "walrus": "import torch\nif (cuda := torch.cuda).is_available():\n    cuda.x()\n"
    "v = data if (data := torch.cuda) else None\n",
    "for and with": "import torch\nfor torch in xs:\n    torch.cuda\n"
    "with open(p) as cuda, g(cuda) as h:\n    cuda.x\n",
    "except": "import torch\ntry:\n    pass\nexcept torch.cuda.OutOfMemoryError as torch:\n"
    "    torch.x\n",
    "builtins and locals": "x = int(3)\ndevice_id = rank + 1\nprint(numba)\nimport numba\n",
}


@pytest.mark.parametrize("name", CASES)
def test_scoping_cases(name: str) -> None:
    assert assert_same_names(CASES[name].encode())


FIXTURES = [
    p
    for p in sorted((ROOT / "fixtures").rglob("*.py"))
    # (the stdlib parser refuses legacy* and unevaluable* files; latin1* is not UTF-8)
    if "parse." not in str(p) and not any(w in p.name for w in ("legacy", "latin1", "unevaluable"))
]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_fixtures(path: Path) -> None:
    assert_same_names(path.read_bytes())


def test_pieces_of_a_large_file_cover_it_exactly() -> None:
    """engine/spans/chunks.py: cut only between top-level statements, lines as in the file."""
    source = b"".join(
        [
            b"import torch\n",
            b"@decorator(\n    1)\ndef f():\n    '''doc\nelse:\n'''\n    return 1\n",
            b"if x:\n    y = 1\nelse:\n    y = 2\n",
            b"try:\n    pass\nexcept E:\n    pass\nfinally:\n    pass\n",
            b"z = (1,\n2)\n",
            b"s = '''\ntext at column zero\n'''\n",
        ]
        * 40
    )
    whole = ast.dump(ast.parse(source), include_attributes=True)
    cut = list(pieces(source, size=64))
    assert len(cut) > 10
    starts = [piece[1] for piece, _ in cut]
    assert starts == sorted(starts) and cut[-1][0][2] == len(source)
    assert "".join(
        ast.dump(stmt, include_attributes=True) for _, tree in cut for stmt in tree.body
    ) == "".join(ast.dump(stmt, include_attributes=True) for stmt in ast.parse(source).body)
    assert whole


hypothesis = pytest.importorskip("hypothesis")
hypothesmith = pytest.importorskip("hypothesmith")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from spliced_programs import spliced  # noqa: E402


@settings(
    max_examples=int(os.environ.get("MSFT_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(spliced(hypothesmith.from_node()))
def test_generated_programs(source: str) -> None:
    data = source.encode("utf-8")
    try:
        ast.parse(data)
        cst.parse_module(data)
    except (SyntaxError, ValueError, cst.ParserSyntaxError):
        return
    try:
        assert_same_names(data)
    except S.UnsupportedScope:
        pass


def test_the_scopes_that_sealed_a_shared_global_scope_release_it() -> None:
    """A module migrated in pieces shares one global scope: a piece's Scopes leaves it alone
    when released (the other pieces read it), the Scopes that gathered it clears it (it used to
    compare the scope, not itself, with the sealer, so nothing ever cleared it)."""
    from ms_fmk_transplt.engine.scope_bindings import walk_global

    tree = ast.parse("import torch\nx = torch.zeros(1)\n")
    sealer = Scopes(tree)
    walk_global(sealer, tree)
    sealer.seal_global()
    piece = Scopes(tree, global_scope=sealer.global_scope)
    piece.release()
    assert set(sealer.global_scope.bindings) == {"torch", "x"}
    sealer.release()
    assert not sealer.global_scope.bindings


# -- the LibCST pass with these names ---------------------------------------------------------
RULE_CASES = sorted(
    p
    for p in (ROOT / "fixtures" / "rules").glob("*/*.py")
    if not p.name.endswith(".expected.py") and fixture_parsed(p)
)


@pytest.mark.parametrize("case", RULE_CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_libcst_pass_gives_the_same_with_these_names(case: Path) -> None:
    """The LibCST pass (-r, -s, -sim, distributed, declined files) resolves names with
    engine/scopes.py: the same result as with LibCST's providers, options of each case too."""
    from helpers import case_options

    from ms_fmk_transplt.engine.cst_pass import cst_pass
    from ms_fmk_transplt.engine.migrate import _finish
    from ms_fmk_transplt.engine.options import DEFAULT_OPTIONS
    from ms_fmk_transplt.events import FileResult

    options = case_options(case) or DEFAULT_OPTIONS
    source = case.read_bytes()
    results = []
    for libcst_names in (False, True):
        done = cst_pass(source, case.name, load_tables(), options, libcst_names=libcst_names)
        if not isinstance(done, FileResult):
            done = _finish(source, case.name, done)
        results.append((done.output, done.events, done.notices))
    assert results[0] == results[1]
