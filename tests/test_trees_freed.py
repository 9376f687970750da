"""A migrated file's trees are freed by reference counting as soon as migrate_source returns:
nothing of the pass (scopes, the target scan, recursive helpers) keeps them in a reference
cycle, which the cyclic garbage collector would have to find and free after each file, and
a large file's peak memory holds them no longer than its pass. And a tree's statements are
walked once (global/nonlocal, imports) however many scopes of it are built and whoever asks
for its imports."""

from __future__ import annotations

import ast
import gc
from collections.abc import Iterator

import pytest

from ms_fmk_transplt.engine import migrate_source
from ms_fmk_transplt.engine.scope_bindings import declaring_scopes
from ms_fmk_transplt.engine.scopes import Scopes
from ms_fmk_transplt.engine.spans.anchors import import_statements
from ms_fmk_transplt.engine.statements import tree_statements
from ms_fmk_transplt.tables import Tables, load_tables

# migrated (span pass, strings, scopes, module facts), and with what the target scan reads
SOURCE = b'''"""doc"""
import os
import torch
import torch.nn.functional as F

COUNT = 0


def step(model, x):
    global COUNT
    COUNT += 1
    device = torch.device("cuda:0")
    y = F.interpolate(x.cuda(), scale_factor=2)
    os.environ["CUDA_VISIBLE_DEVICES"] = f"{COUNT}"
    torch.cuda.synchronize()
    return model(y.to(device)), torch.cdist(y, y)
'''

# also through the whole-file analyses that keep a list of every node on the tree
# (engine/tree_nodes.py): CUDA-only names and predicates, "cuda" beside "npu", accelerators
# (Lightning's, in a file that imports Lightning)
KERNELS = b"""import lightning
import torch
import triton


@triton.jit
def kernel(x):
    return x


def eligible(x):
    return x.is_cuda and x.dtype == torch.float16


def run(x, accelerator="cuda"):
    if not eligible(x):
        return x + 1
    if x.device.type in ("cuda", "npu"):
        pass
    return kernel(x.cuda())
"""


@pytest.fixture(scope="module")
def tables() -> Tables:
    return load_tables()


@pytest.fixture
def saved_garbage() -> Iterator[list[object]]:
    """What the cyclic collector finds unreachable, kept in a list instead of freed."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.collect()


@pytest.mark.parametrize("source", [SOURCE, KERNELS], ids=["step", "kernels"])
def test_no_tree_left_in_a_cycle(
    source: bytes, tables: Tables, saved_garbage: list[object]
) -> None:
    result = migrate_source(source, "step.py", tables)
    assert result.events and result.output != source  # the pass ran and changed the file
    if source is KERNELS:  # the whole-file analyses ran
        rules = {n.rule for n in result.notices}
        assert {"cuda_only.guard", "cuda_only.npu_tensor", "device_strings.not_a_device"} <= rules
    gc.collect()
    trees = [o for o in saved_garbage if isinstance(o, ast.AST)]
    assert trees == []


def test_scopes_of_a_tree_share_one_declaring_scan() -> None:
    tree = ast.parse("def f():\n    global g\n    g = 1\ndef h():\n    return 2\n")
    first, second = Scopes(tree), Scopes(tree)
    assert first.eager is second.eager is declaring_scopes(tree)
    assert first.eager == {id(tree.body[0])}
    assert declaring_scopes(ast.parse("def h():\n    return 2\n")) == frozenset()


def test_one_walk_of_a_trees_statements_finds_every_import_in_order() -> None:
    tree = ast.parse(
        "import a\ndef f():\n    import b\n    class C:\n        from c import d\n"
        "try:\n    import e\nexcept ImportError:\n    import g\nelse:\n    import h\n"
    )
    found = import_statements(tree)
    assert [ast.unparse(s) for s in found] == [
        "import a",
        "import b",
        "from c import d",
        "import e",
        "import g",
        "import h",
    ]
    assert tree_statements(tree) is tree_statements(tree)
    found.clear()  # a caller's list, not the tree's
    assert len(import_statements(tree)) == 6
