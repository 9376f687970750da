"""Exact output bytes and change-list rows (rule, operation, input and output lines, Before,
After) where the syntax around a rewrite is unusual: parentheses around nodes, implicit string
concatenation, f-strings, keyword arguments removed from a call, a from-import split between
torch.npu and torch.cuda."""

from __future__ import annotations

import pytest

from ms_fmk_transplt.engine.migrate import migrate_source
from ms_fmk_transplt.events import FileResult
from ms_fmk_transplt.tables import load_tables

TORCH_NPU = ("imports.torch_npu", "INSERT", 2, 2, 2, 2, "", "import torch_npu")


def _migrate(source: bytes) -> FileResult:
    return migrate_source(source, "m.py", load_tables())


def _rows(result: FileResult) -> list[tuple[object, ...]]:
    return [
        (e.rule, e.operation.value, e.start_line, e.end_line)
        + (e.out_start_line, e.out_end_line, e.before, e.after)
        for e in result.events
    ]


def _notices(result: FileResult) -> list[tuple[object, ...]]:
    return [(n.rule, n.line, n.out_line, n.api, n.category, n.action) for n in result.notices]


def test_parenthesized_nodes() -> None:
    result = _migrate(
        b"import torch\n"
        b"y = (\n    x.cuda()\n)\n"
        b"z = f((torch.cuda.current_device()), (local_rank))\n"
        b"w = (t).to((rank))\n"
        b"v = torch.device((rank))\n"
        b'u = ("cuda" "nccl")\n'
    )
    assert result.output == (
        b"import torch\n"
        b"import torch_npu\n"
        b"y = (\n    x.npu()\n)\n"
        b"z = f((torch.npu.current_device()), (local_rank))\n"
        b'w = (t).to(f"npu:{(rank)}")\n'
        b'v = torch.device("npu", (rank))\n'
        b'u = ("npu" "hccl")\n'
    )
    assert _rows(result) == [
        TORCH_NPU,
        ("tensor_methods.cuda_call", "MODIFY", 3, 3, 4, 4, "x.cuda()", "x.npu()"),
        ("device_api.interface_table", "MODIFY", 5, 5, 6, 6)
        + ("torch.cuda.current_device", "torch.npu.current_device"),
        ("device_strings.int_device", "MODIFY", 6, 6, 7, 7)
        + ("(t).to((rank))", '(t).to(f"npu:{(rank)}")'),
        ("device_strings.int_device", "MODIFY", 7, 7, 8, 8)
        + ("torch.device((rank))", 'torch.device("npu", (rank))'),
        ("device_strings.literal", "MODIFY", 8, 8, 9, 9, '"cuda"', '"npu"'),
        ("distributed.nccl_backend", "MODIFY", 8, 8, 9, 9, '"nccl"', '"hccl"'),
    ]
    assert _notices(result) == []


def test_concatenations_and_fstrings() -> None:
    result = _migrate(
        b"import torch\n"
        b'a = ("cuda" ":0")\n'
        b'b = "x" f"{y.cuda()} cuda" "CUDA_VISIBLE_DEVICES"\n'
        b"c = x.to(f\"{'cuda'}\")\n"
        b'd = f"cuda:{rank}" if ok else "cpu"\n'
        b'e = t.to("cu" "da")\n'
    )
    assert result.output == (
        b"import torch\n"
        b"import torch_npu\n"
        b'a = ("npu" ":0")\n'
        b'b = "x" f"{y.npu()} cuda" "CUDA_VISIBLE_DEVICES"\n'
        b"c = x.to(f\"{'npu'}\")\n"
        b'd = f"npu:{rank}" if ok else "cpu"\n'
        b'e = t.to("cu" "da")\n'
    )
    assert _rows(result) == [
        TORCH_NPU,
        ("device_strings.literal", "MODIFY", 2, 2, 3, 3, '"cuda"', '"npu"'),
        ("tensor_methods.cuda_call", "MODIFY", 3, 3, 4, 4, "y.cuda()", "y.npu()"),
        ("device_strings.literal", "MODIFY", 4, 4, 5, 5, "'cuda'", "'npu'"),
        ("device_strings.fstring", "MODIFY", 5, 5, 6, 6, 'f"cuda:{rank}"', 'f"npu:{rank}"'),
    ]
    assert _notices(result) == [
        ("unsupported.environment", 3, 4, "CUDA_VISIBLE_DEVICES", "environment", "manual")
    ]


_PROFILED = (
    "import torch\n{}from torch.autograd.profiler import profile\n"
    "async def f(a, b, c, xs, z, kw):\n    with {} as p:\n        pass\n"
)
_ADVICE = ("advice.ascend_profiler", 4, 5, "torch.autograd.profiler.profile")
_ADVICE += ("performance", "advice")


_SAME_LINE = (4, 4, 5, 5)
_IF_NPU = 'profile(use_device="npu" if {} else None)'


@pytest.mark.parametrize(
    ("call", "migrated", "lines", "before", "after"),
    [
        ("profile(use_cuda=False)", "profile()", _SAME_LINE, None, None),
        ("profile( use_cuda=False, )", "profile( )", _SAME_LINE, None, None),
        ("profile(a , use_cuda=False)", "profile(a)", _SAME_LINE, None, None),
        ("profile(a, use_cuda=False , )", "profile(a , )", _SAME_LINE, None, None),
        (
            "profile(use_cuda = False ,  b=2)",
            "profile(b=2)",
            _SAME_LINE,
            "profile(use_cuda = False , b=2)",
            None,
        ),
        # alone on its line: the argument goes, every comment stays (the line keeps its comment)
        (
            "profile(\n    a,  # x\n    use_cuda=False,  # y\n)",
            "profile(\n    a,  # x\n    # y\n)",
            (6, 6, 7, 7),
            "profile( a, # x use_cuda=False, # y )",
            "profile( a, # x # y )",
        ),
        # alone on its line without a comment: the line is left empty (no line moves)
        (
            "profile(\n    use_cuda=False,\n    record_shapes=True,\n)",
            "profile(\n\n    record_shapes=True,\n)",
            (5, 5, 6, 6),
            "profile( use_cuda=False, record_shapes=True, )",
            "profile( record_shapes=True, )",
        ),
        ("profile((a), use_cuda=(False))", "profile((a))", _SAME_LINE, None, None),
        ("profile(*xs, use_cuda=False, **kw)", "profile(*xs, **kw)", _SAME_LINE, None, None),
        ("profile(use_cuda=a or b)", _IF_NPU.format("a or b"), _SAME_LINE, None, None),
        (
            "profile(use_cuda=(a if b else c))",
            _IF_NPU.format("(a if b else c)"),
            _SAME_LINE,
            None,
            None,
        ),
        ("profile(use_cuda=await z)", _IF_NPU.format("await z"), _SAME_LINE, None, None),
    ],
)
def test_use_cuda_removed_or_computed(
    call: str, migrated: str, lines: tuple[int, ...], before: str | None, after: str | None
) -> None:
    def indented(text: str) -> str:  # (an empty line stays empty)
        return text.replace("\n", "\n    ").replace("\n    \n", "\n\n")

    result = _migrate(_PROFILED.format("", indented(call)).encode())
    assert result.output == _PROFILED.format("import torch_npu\n", indented(migrated)).encode()
    row = ("profiler.use_cuda", "MODIFY", *lines, before or call, after or migrated)
    assert _rows(result) == [TORCH_NPU, row]
    assert _notices(result) == [_ADVICE]


@pytest.mark.parametrize(
    ("statement", "migrated", "lines", "before", "after", "notice_lines"),
    [
        (
            "from  torch.cuda  import  nvtx as n ,  synchronize as s",
            "from  torch.npu  import  synchronize as s; from  torch.cuda  import  nvtx as n",
            (2, 2, 3, 3),
            "from torch.cuda import nvtx as n , synchronize as s",
            "from torch.npu import synchronize as s; from torch.cuda import nvtx as n",
            (2, 3),
        ),
        (
            "from torch.cuda import (\n    synchronize,  # a\n    nvtx,  # b\n)",
            "from torch.npu import synchronize; from torch.cuda import nvtx",
            (2, 5, 3, 3),  # the four lines became one (line_map.py)
            "from torch.cuda import ( synchronize, # a nvtx, # b )",
            None,
            (4, 3),
        ),
        (
            "x = 1; from torch.cuda import synchronize, nvtx",
            "x = 1; from torch.npu import synchronize; from torch.cuda import nvtx",
            (2, 2, 3, 3),
            "from torch.cuda import synchronize, nvtx",
            None,
            (2, 3),
        ),
        # as today: the After of the row shows the semicolon twice
        (
            "from torch.cuda import synchronize, nvtx  ;  y = 2",
            "from torch.npu import synchronize  ;  from torch.cuda import nvtx  ;  y = 2",
            (2, 2, 3, 3),
            "from torch.cuda import synchronize, nvtx ;",
            "from torch.npu import synchronize ;; from torch.cuda import nvtx ;",
            (2, 3),
        ),
        (
            "from torch.cuda import synchronize, nvtx ;",
            "from torch.npu import synchronize ;from torch.cuda import nvtx ;",
            (2, 2, 3, 3),
            "from torch.cuda import synchronize, nvtx ;",
            "from torch.npu import synchronize ;; from torch.cuda import nvtx ;",
            (2, 3),
        ),
        (
            "if True:\n    from torch.cuda import synchronize, nvtx",
            "if True:\n    from torch.npu import synchronize; from torch.cuda import nvtx",
            (3, 3, 4, 4),
            "from torch.cuda import synchronize, nvtx",
            None,
            (3, 4),
        ),
        (
            "from torch.cuda import synchronize, \\\n    nvtx",
            "from torch.npu import synchronize; from torch.cuda import nvtx",
            (2, 3, 3, 3),  # the two lines became one (line_map.py)
            "from torch.cuda import synchronize, \\ nvtx",
            None,
            (3, 3),
        ),
    ],
)
def test_from_import_split_between_npu_and_cuda(
    statement: str,
    migrated: str,
    lines: tuple[int, ...],
    before: str,
    after: str | None,
    notice_lines: tuple[int, int],
) -> None:
    """torch.cuda.nvtx has no torch.npu counterpart: it stays imported from torch.cuda."""
    result = _migrate(f"import os\n{statement}\nprint(1)\n".encode())
    assert result.output == f"import os\nimport torch_npu\n{migrated}\nprint(1)\n".encode()
    after = after or "from torch.npu import synchronize; from torch.cuda import nvtx"
    assert _rows(result) == [TORCH_NPU, ("imports.cuda_module", "MODIFY", *lines, before, after)]
    notice = ("device_api.no_npu_counterpart", *notice_lines, "torch.cuda.nvtx")
    assert _notices(result) == [(*notice, "cuda_only_api", "manual")]
