"""engine/rules/cuda_only/cuda_only_hints.py: the literal words searched for before the hint
pattern decide exactly as the pattern alone does (a file without any of them cannot match)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ms_fmk_transplt.engine.rules.cuda_only.cuda_only_hints import _HINT, _hint

ROOT = Path(__file__).resolve().parent.parent

# one line for each alternative of the pattern, and near misses
LINES = [
    b"import torch, triton\n",
    b"from ops.triton.x import k\n",
    b"from torch.utils.cpp_extension import load\n",
    b'srcs = ["k.cu", "k.cuh"]\n',
    b"srcs = ['k.cuh']\n",
    b"import fused_cuda\n",
    b"from ext_cuda import f\n",
    b"from x import _cuda import y\n",
    b"plugin = get_plugin('upfirdn2d')\n",
    b"m = importlib.import_module( 'pkg.ops_cuda')\n",
    b"import tritonclient\n",
    b"x = x.cuda()\n",
    b"import torch\nif t.is_cuda:\n    pass\n",
    b"y = 'k.cu'.upper()\n",
]


@pytest.mark.parametrize("line", LINES)
def test_words_then_pattern_is_the_pattern(line: bytes) -> None:
    assert _hint(line) == (_HINT.search(line) is not None)


def test_the_lines_hold_matches_and_misses() -> None:
    # all but tritonclient, .cuda() and is_cuda (a quoted ".cu" anywhere is a hint)
    assert [_hint(line) for line in LINES].count(False) == 3


def test_same_answer_on_every_fixture() -> None:
    files = [*ROOT.glob("fixtures/**/*.py")]
    assert len(files) > 100
    for path in files:
        data = path.read_bytes()
        assert _hint(data) == (_HINT.search(data) is not None), path
