"""Names resolve through imports, not text."""

from __future__ import annotations

import pytest
from helpers import tables_for

from ms_fmk_transplt.engine import migrate_source


def migrate(code: str) -> str:
    return migrate_source(code.encode(), "t.py", tables_for()).output.decode()


@pytest.mark.parametrize(
    ("code", "expected_line"),
    [
        ("import torch as th\nth.cuda.synchronize()\n", "th.npu.synchronize()"),
        ("import torch.cuda as tc\ntc.synchronize()\n", "import torch.npu as tc"),
        ("from torch import cuda\ncuda.synchronize()\n", "from torch import npu as cuda"),
        ("from torch import cuda as c\nc.synchronize()\n", "from torch import npu as c"),
        ("from torch.cuda.amp import autocast\nautocast()\n", "from torch.npu.amp import autocast"),
        ("import torch.nn as nn\nm = nn.Linear(2, 2).cuda()\n", "m = nn.Linear(2, 2).npu()"),
        ("torch.cuda.synchronize()\n", "torch.npu.synchronize()"),  # snippet without import
    ],
)
def test_import_forms(code: str, expected_line: str) -> None:
    out = migrate(code)
    assert expected_line in out.splitlines()
    assert out.count("import torch_npu") == 1


@pytest.mark.parametrize(
    "code",
    [
        "from numba import cuda\ncuda.synchronize()\n",
        "import numba.cuda\nnumba.cuda.jit(f)\n",
        "import cupy as cp\ncp.cuda.Device(0).use()\n",
        "import torch\ndef f(cfg):\n    return cfg.cuda\n",
        "import torch\ndef f(cuda):\n    return cuda.synchronize()\n",
        "import torch\ncuda = make()\ncuda.synchronize()\n",
        "import torch\nclass A:\n    cuda = True\nprint(A.cuda)\n",
        "import torch\nx = {'use_cuda': True}\nprint('cuda is great')\n",
        'import torch\ndef f():\n    """Runs on "cuda"."""\n    return 1\n',
        "import torch\n# torch.cuda.synchronize() in a comment\n",
    ],
)
def test_left_alone(code: str) -> None:
    result = migrate_source(code.encode(), "t.py", tables_for())
    assert result.output == code.encode()
    assert result.events == []


def test_unsupported_member_warns_and_stays() -> None:
    code = "import torch\ntorch.cuda.nvtx.range_push('a')\n"
    result = migrate_source(code.encode(), "t.py", tables_for())
    assert result.output == code.encode()
    [notice] = result.notices
    assert (notice.line, notice.rule, notice.api) == (
        2,
        "device_api.no_npu_counterpart",
        "torch.cuda.nvtx.range_push",
    )


def test_int_devices_in_a_file_without_cuda() -> None:
    """The byte pre-filter must not skip files whose only NPU work is an integer device."""
    code = "import torch\n\ndef f(model, local_rank):\n    return model.to(local_rank)\n"
    assert 'model.to(f"npu:{local_rank}")' in migrate(code)
