"""engine/scopes.py: the qualified name the engine takes each name, attribute and call of a
file to be (``chosen_name`` over ``Scopes.qualified_names``), on hand-written scoping cases:
aliases, dotted imports, shadowing, later bindings, class bodies, comprehensions, global and
nonlocal, the walrus, for/with/except targets, builtins. Every expression that resolves to a
name is listed below with it; every other one resolves to nothing. (Computed by scopes.py and
checked against LibCST's QualifiedNameProvider before the LibCST twins were deleted: the same
on every node both have.)"""

from __future__ import annotations

import ast

import pytest

from ms_fmk_transplt.engine.cst_names import scoped_children
from ms_fmk_transplt.engine.scope_model import Scope, chosen_name, full_name
from ms_fmk_transplt.engine.scopes import Scopes

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

NAMES = {
    "aliases": [
        "Name 4:0 th = torch",
        "Attribute 4:0 th.cuda = torch.cuda",
        "Attribute 4:0 th.cuda.synchronize = torch.cuda.synchronize",
        "Call 4:0 th.cuda.synchronize() = torch.cuda.synchronize",
        "Name 4:23 tc = torch.cuda",
        "Attribute 4:23 tc.current_device = torch.cuda.current_device",
        "Call 4:23 tc.current_device() = torch.cuda.current_device",
        "Name 4:44 cuda = torch.cuda",
        "Attribute 4:44 cuda.is_available = torch.cuda.is_available",
        "Call 4:44 cuda.is_available() = torch.cuda.is_available",
    ],
    "dotted import": [
        "Name 3:0 torch = torch",
        "Attribute 3:0 torch.cuda = torch.cuda",
        "Attribute 3:0 torch.cuda.synchronize = torch.cuda.synchronize",
        "Call 3:0 torch.cuda.synchronize() = torch.cuda.synchronize",
        "Name 4:0 torch = torch",
        "Attribute 4:0 torch.distributed = torch.distributed",
        "Attribute 4:0 torch.distributed.get_rank = torch.distributed.get_rank",
        "Call 4:0 torch.distributed.get_rank() = torch.distributed.get_rank",
        "Name 5:0 x = x",
        "Name 5:4 torch = torch",
        "Attribute 5:4 torch.cuda = torch.cuda",
        "Attribute 5:4 torch.cuda.current_device = torch.cuda.current_device",
        "Call 5:4 torch.cuda.current_device() = torch.cuda.current_device",
        "Attribute 5:4 torch.cuda.current_device().real = torch.cuda.current_device.real",
    ],
    "shadowed": [
        "Name 3:11 torch = f.<locals>.torch",
        "Attribute 3:11 torch.cuda = f.<locals>.torch.cuda",
        "Attribute 3:11 torch.cuda.x = f.<locals>.torch.cuda.x",
        "Name 5:4 cuda = g.<locals>.cuda",
        "Name 6:11 cuda = g.<locals>.cuda",
    ],
    "later binding": [
        "Name 1:0 x = x",
        "Attribute 1:4 cuda.a = torch.cuda.a",
        "Name 3:0 y = y",
        "Name 3:4 cuda = torch.cuda",
        "Attribute 3:4 cuda.b = torch.cuda.b",
    ],
    "class bodies": [
        "Name 3:4 torch = C.torch",
        "Name 5:15 torch = torch",
        "Attribute 5:15 torch.cuda = torch.cuda",
        "Name 6:4 y = C.y",
        "Name 6:9 torch = torch",
        "Name 6:19 _ = C.<comprehension>._",
        "Name 6:24 range = builtins.range",
        "Call 6:24 range(2) = builtins.range",
    ],
    "comprehensions": [
        "Name 2:0 z = z",
        "Name 2:5 t = <comprehension>.t",
        "Attribute 2:5 t.cuda = <comprehension>.t.cuda",
        "Call 2:5 t.cuda() = <comprehension>.t.cuda",
        "Name 2:18 t = <comprehension>.t",
        "Name 2:29 t = <comprehension>.t",
        "Attribute 2:29 t.is_cuda = <comprehension>.t.is_cuda",
        "Name 3:0 w = w",
        "Name 3:5 k = <comprehension>.k",
        "Name 3:8 torch = <comprehension>.torch",
        "Attribute 3:8 torch.cuda = <comprehension>.torch.cuda",
        "Name 3:23 k = <comprehension>.k",
        "Name 3:35 torch = <comprehension>.torch",
        "Name 3:44 k = <comprehension>.k",
    ],
    "global and nonlocal": [
        "Name 5:4 th = g.<locals>.th",
        "Name 9:11 th = torch",
        "Attribute 9:11 th.cuda = torch.cuda",
        "Name 10:0 print = builtins.print",
        "Call 10:0 print(torch.cuda) = builtins.print",
        "Name 10:6 torch = torch",
        "Attribute 10:6 torch.cuda = torch.cuda",
    ],
    # (as LibCST named them: a chain rooted in a parenthesized walrus is builtins.None)
    "walrus": [
        "Attribute 2:3 (cuda := torch.cuda).is_available = builtins.None",
        "Call 2:3 (cuda := torch.cuda).is_available() = builtins.None",
        "Name 2:4 cuda = cuda",
        "Name 2:12 torch = torch",
        "Attribute 2:12 torch.cuda = torch.cuda",
        "Name 3:4 cuda = cuda",
        "Attribute 3:4 cuda.x = cuda.x",
        "Call 3:4 cuda.x() = cuda.x",
        "Name 4:0 v = v",
        "Name 4:13 data = data",
        "Name 4:21 torch = torch",
        "Attribute 4:21 torch.cuda = torch.cuda",
    ],
    "for and with": [
        "Name 2:4 torch = torch",
        "Name 3:4 torch = torch",
        "Attribute 3:4 torch.cuda = torch.cuda",
        "Name 4:5 open = builtins.open",
        "Call 4:5 open(p) = builtins.open",
        "Name 4:16 cuda = cuda",
        "Name 4:24 cuda = cuda",
        "Name 4:33 h = h",
        "Name 5:4 cuda = cuda",
        "Attribute 5:4 cuda.x = cuda.x",
    ],
    "except": [
        "Name 4:7 torch = torch",
        "Attribute 4:7 torch.cuda = torch.cuda",
        "Attribute 4:7 torch.cuda.OutOfMemoryError = torch.cuda.OutOfMemoryError",
        "Name 5:4 torch = torch",
        "Attribute 5:4 torch.x = torch.x",
    ],
    "builtins and locals": [
        "Name 1:0 x = x",
        "Name 1:4 int = builtins.int",
        "Call 1:4 int(3) = builtins.int",
        "Name 2:0 device_id = device_id",
        "Name 3:0 print = builtins.print",
        "Call 3:0 print(numba) = builtins.print",
    ],
}


def _top(node: ast.AST, parent: dict[int, ast.AST]) -> ast.Attribute | None:
    """The outermost attribute above the name at the root of ``node``, not beyond a call."""
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


def resolved_names(code: str) -> list[str]:
    """``Kind line:column text = qualified name`` of every expression that resolves to one,
    in the order of the file (names inside an import statement resolve to nothing)."""
    tree = ast.parse(code)
    parent = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    scopes = Scopes(tree, walrus=":=" in code)
    found: dict[tuple[int, int, int, int, str], str | None] = {}

    def walk(node: ast.AST, scope: Scope, in_import: bool) -> None:
        in_import = in_import or isinstance(node, (ast.Import, ast.ImportFrom))
        if isinstance(node, (ast.Name, ast.Attribute, ast.Call)):
            key = (node.lineno, node.col_offset, node.end_lineno or 0, node.end_col_offset or 0)
            text = ast.get_source_segment(code, node) or ""
            name = None
            if not in_import:
                names = scopes.qualified_names(node, scope, _top(node, parent))
                literal = full_name(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
                name = chosen_name(names, literal)
            found.setdefault((*key, f"{type(node).__name__} {key[0]}:{key[1]} {text}"), name)
        for child, child_scope in scoped_children(node, scope, scopes):
            walk(child, child_scope, in_import)

    walk(tree, scopes.global_scope, False)
    return [f"{shown} = {name}" for (*_, shown), name in sorted(found.items()) if name]


def test_every_case_has_its_names_and_every_name_list_its_case() -> None:
    """The cases below run over CASES: a list in NAMES without a case would never be checked."""
    assert sorted(CASES) == sorted(NAMES)


@pytest.mark.parametrize("name", CASES)
def test_scoping_cases(name: str) -> None:
    assert resolved_names(CASES[name]) == NAMES[name]


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
