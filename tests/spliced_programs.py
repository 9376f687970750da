"""Generated programs with CUDA code spliced in, for the property tests.

The hosts come from hypothesmith.from_node(), which builds programs from LibCST's node grammar
(every node type, odd whitespace, nesting). Generated programs almost never mention CUDA, so
CUDA statements, expressions and strings are spliced into them: names in load positions become
CUDA expressions (some built around generated sub-expressions), string literals become device
or backend strings, statements are inserted at statement boundaries of every block (or joined
to simple lines with semicolons), the whole program may be wrapped in a function, class or CUDA
block, and imports usually come first. (hypothesmith.from_grammar() is not used: building its
Lark LALR parser for the Python grammar took more than a minute here.)"""

from __future__ import annotations

import libcst as cst
from hypothesis import assume
from hypothesis import strategies as st
from libcst.metadata import ExpressionContext, ExpressionContextProvider, MetadataWrapper

CUDA_STATEMENTS = [
    "import torch\n",
    "import torch as th\n",
    "import torch.distributed as dist\n",
    "import torch.cuda as tc\n",
    "from torch import cuda\n",
    "from torch.cuda.amp import autocast, GradScaler\n",
    "from apex import amp\n",
    "from torch.utils.data import DataLoader\n",
    "x = torch.ones(2).cuda()\n",
    "torch.cuda.synchronize()\n",
    "th.cuda.empty_cache()\n",
    "tc.manual_seed_all(0)\n",
    "d = 'cuda:0'\n",
    "dist.init_process_group('nccl')\n",
    "dist.init_process_group(backend=dist.Backend.NCCL)\n",
    "y = x.to(local_rank)\n",
    "z = f'cuda:{rank}'\n",
    "torch.backends.cudnn.benchmark = True\n",
    "model = nn.DataParallel(model).cuda()\n",
    "model = torch.nn.DataParallel(model, device_ids=[0, 1])\n",
    "torch.cuda.set_device(args.gpu)\n",
    "scaler = torch.cuda.amp.GradScaler()\n",
    "t = torch.cuda.FloatTensor([1.0])\n",
    "device = torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')\n",
    "if x.is_cuda:\n    x = x.cuda(non_blocking=True)\n",
    "with torch.cuda.amp.autocast():\n    loss = model(x.cuda())\n",
    "with autocast(enabled=True):\n    pass\n",
    "with torch.autograd.profiler.profile(use_cuda=True) as prof:\n    pass\n",
    "with torch.cuda.device(0), torch.cuda.stream(s):\n    pass\n",
    "loader = DataLoader(dataset, batch_size=8, shuffle=True)\n",
    "loader = torch.utils.data.DataLoader(build(), shuffle=args.shuffle)\n",
    "for epoch in range(3):\n    for batch in loader:\n        model(batch.cuda())\n",
    "model = Net().cuda(); optimizer = SGD(model.parameters())\n",
    "model.load_state_dict(torch.load(path, map_location='cuda:0'))\n",
    "w = torch.zeros(2, device=local_rank)\n",
    "model, optimizer = amp.initialize(model, optimizer, opt_level='O1')\n",
    "torch.cuda.nvtx.range_push('fwd')\n",
    "from apex.normalization import FusedLayerNorm\n",
    "from mylab.devices import gpu_utils\n",
    "opt = torch.optim.SGD(params, 0.1)\n",
    "if __name__ == '__main__':\n    main()\n",
    "pass  # cuda in a comment\n",
    "# a cuda comment line\ntorch.cuda.synchronize()  # msft: ignore\n",
    '"""cuda docstring"""\n',
]

CUDA_EXPRESSIONS = [
    "torch.cuda.synchronize",
    "torch.cuda.synchronize()",
    "x.cuda()",
    "model.cuda(args.gpu)",
    '"cuda:0"',
    "'cuda'",
    "b'cuda'",
    'f"cuda:{local_rank}"',
    'torch.device("cuda", 1)',
    "torch.cuda.is_available()",
    "th.cuda.current_device()",
    "x.is_cuda",
    "torch.cuda",
    "tc",
    "cuda",
    "local_rank",
    "torch.backends.cudnn",
    "torch.cuda.amp.autocast(enabled=True)",
    "torch.cuda.device_count()",
    "torch.cuda.get_device_properties(0).total_memory",
    "nn.DataParallel(model)",
]

HOLE = "msft_hole"
TEMPLATES = [
    "torch.cuda.set_device({})",
    "{}.cuda()",
    "x.cuda({})",
    "x.to({})",
    "x.to({}, non_blocking=True)",
    "torch.device({})",
    "torch.device('cuda', {})",
    "torch.zeros(2, device={})",
    "torch.load(f, map_location={})",
    "dist.init_process_group({})",
    "torch.autograd.profiler.profile(use_cuda={})",
    "torch.cuda.amp.autocast({})",
    "DataLoader({}, shuffle=True)",
    "torch.cuda.{}",
]

WRAPPERS = [
    "def train(model, x, local_rank):\n    pass\n",
    "class Net(torch.nn.Module):\n    pass\n",
    "if torch.cuda.is_available():\n    pass\n",
    "with torch.cuda.device(0):\n    pass\n",
    "for epoch in range(3):\n    pass\n",
    "try:\n    pass\nexcept RuntimeError:\n    x = x.cuda()\n",
    "async def main():\n    pass\n",
]


def _parse_stmt(code: str) -> cst.BaseStatement:
    return cst.parse_module(code).body[0]


STMT_NODES = [cst.parse_module(s).body for s in CUDA_STATEMENTS]
EXPR_NODES = [cst.parse_expression(e) for e in CUDA_EXPRESSIONS]


class _Hole(cst.CSTTransformer):
    def __init__(self, value: cst.BaseExpression) -> None:
        self.value = value

    def leave_Name(self, original, updated):
        return self.value if original.value == HOLE else updated


def _template(template: str, value: cst.BaseExpression) -> cst.BaseExpression:
    if template.startswith("torch.cuda.{}"):
        name = value.value if isinstance(value, cst.Name) else "synchronize"
        return cst.parse_expression(f"torch.cuda.{name}")
    return cst.parse_expression(template.format(HOLE)).visit(_Hole(value))


class _Exclusions(cst.CSTVisitor):
    """Name nodes in positions an arbitrary expression may not take."""

    def __init__(self) -> None:
        self.ids: set[int] = set()

    def _all(self, node: cst.CSTNode) -> None:
        class All(cst.CSTVisitor):
            def visit_Name(inner, n: cst.Name) -> None:  # noqa: N805
                self.ids.add(id(n))

        node.visit(All())

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.ids.add(id(node.keyword))

    def visit_Import(self, node: cst.Import) -> None:
        self._all(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self._all(node)

    def visit_Global(self, node) -> None:
        self._all(node)

    def visit_Nonlocal(self, node) -> None:
        self._all(node)


@st.composite
def spliced(draw, host: st.SearchStrategy[str]) -> str:
    """A generated program with CUDA statements and expressions spliced in."""
    code = draw(host)
    try:
        module = cst.parse_module(code)
    except cst.ParserSyntaxError:
        return code  # out of scope; the test skips it

    def cuda_expr() -> cst.BaseExpression:
        if draw(st.booleans()):
            return draw(st.sampled_from(EXPR_NODES))
        return _template(draw(st.sampled_from(TEMPLATES)), draw(st.sampled_from(EXPR_NODES)))

    # 1. names in expression positions become CUDA expressions
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    contexts = wrapper.resolve(ExpressionContextProvider)
    excluded = _Exclusions()
    wrapper.module.visit(excluded)
    loads = [
        n
        for n, c in contexts.items()
        if isinstance(n, cst.Name) and c == ExpressionContext.LOAD and id(n) not in excluded.ids
    ]
    strings = [n for n in _collect(wrapper.module, cst.SimpleString)]
    replace: dict[int, cst.BaseExpression] = {}
    if loads:
        for n in draw(st.lists(st.sampled_from(loads), max_size=3, unique_by=id)):
            replace[id(n)] = cuda_expr()
    if strings:
        for n in draw(st.lists(st.sampled_from(strings), max_size=2, unique_by=id)):
            replace[id(n)] = cst.SimpleString(
                draw(st.sampled_from(["'cuda:0'", '"cuda"', "'nccl'", "'cuda:1'"]))
            )
    try:
        module = wrapper.module.visit(_Replace(replace))
    except (AttributeError, TypeError, cst.CSTValidationError):
        # a name whose node type the grammar fixes (e.g. a LibCST field that must stay a
        # Name): this splice does not make a program
        assume(False)

    # 2. CUDA statements at random statement boundaries (any block), and small statements
    #    joined to simple lines with semicolons
    module = module.visit(_Insert(draw))

    # 3. the whole program inside a function, class or CUDA block
    if draw(st.integers(0, 3)) == 0:
        outer = _parse_stmt(draw(st.sampled_from(WRAPPERS)))
        body = list(module.body) or [_parse_stmt("pass\n")]
        outer = outer.with_changes(body=outer.body.with_changes(body=body))
        module = module.with_changes(body=[outer])

    # 4. imports first, mostly
    if draw(st.integers(0, 4)):
        imports = draw(st.lists(st.sampled_from(STMT_NODES[:8]), min_size=1, max_size=3))
        module = module.with_changes(
            body=[s for block in imports for s in block] + list(module.body)
        )
    return module.code


def _collect(node: cst.CSTNode, kind) -> list:
    found = []

    class C(cst.CSTVisitor):
        def on_visit(self, n):
            if isinstance(n, kind):
                found.append(n)
            return True

    node.visit(C())
    return found


class _Replace(cst.CSTTransformer):
    def __init__(self, replace: dict[int, cst.BaseExpression]) -> None:
        self.replace = replace

    def on_leave(self, original, updated):
        new = self.replace.get(id(original))
        return updated if new is None else new


class _Insert(cst.CSTTransformer):
    def __init__(self, draw) -> None:
        self.draw = draw

    def _body(self, body):
        body = list(body)
        for _ in range(self.draw(st.integers(0, 2))):
            at = self.draw(st.integers(0, len(body)))
            body[at:at] = self.draw(st.sampled_from(STMT_NODES))
        return body

    def leave_Module(self, original, updated):
        return updated.with_changes(body=self._body(updated.body))

    def leave_IndentedBlock(self, original, updated):
        return updated.with_changes(body=self._body(updated.body))

    def leave_SimpleStatementLine(self, original, updated):
        if self.draw(st.integers(0, 5)):
            return updated
        small = self.draw(
            st.sampled_from([s for s in STMT_NODES if isinstance(s[0], cst.SimpleStatementLine)])
        )[0].body
        body = list(updated.body)
        at = self.draw(st.integers(0, len(body)))
        body[at:at] = small
        fixed = [
            b.with_changes(semicolon=cst.MaybeSentinel.DEFAULT) if i < len(body) - 1 else b
            for i, b in enumerate(body)
        ]
        return updated.with_changes(body=fixed)
