"""word_matches finds what the same pattern with a leading ``\\b`` finds (engine/word_search.py),
and the byte-level tests that use it answer as their ``\\b`` forms did."""

from __future__ import annotations

import random
import re

import pytest

from ms_fmk_transplt.engine.rules.advice.advice_rows import PATTERN_BYTES, WHOLE_WORD
from ms_fmk_transplt.engine.word_search import word_matches, word_search

PATTERNS = [
    rb"silu\(",
    rb"def\s+(?:rotate_half|apply_rotary_emb)\b",
    rb"class\s+\w*(?i:rmsnorm)",
    rb"(?:contiguous|rsqrt|__main__)(?![A-Za-z0-9_])",
    rb"import\s*(\([^)]*\)|(?:[^\n\\]|\\[\s\S])*)",  # matches that run to the end of the line
]
PIECES = [
    b"silu(",
    b"xsilu(",
    b"_silu(",
    b"def rotate_half",
    b"undef rotate_half",
    b"class MyRMSNorm",
    b"subclass T5RmsNorm",
    b"contiguous",
    b"is_contiguous",
    b"rsqrt",
    b"__main__",
    b"import torch",
    b"reimport x",
    b"x = reimport; import os",
    b" ",
    b"\n",
    b".",
    b"(",
    b"a",
    b"_",
    b"9",
    b"\xc3\xa9",
]


def _expected(pattern: bytes, data: bytes) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(rb"\b(?:" + pattern + rb")", data)]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_same_matches_as_a_leading_word_boundary(pattern: bytes) -> None:
    rng = random.Random(pattern)
    compiled = re.compile(pattern)
    found_some = refused_some = 0
    for _ in range(400):
        data = b"".join(rng.choice(PIECES) for _ in range(rng.randint(0, 12)))
        expected = _expected(pattern, data)
        assert [m.span() for m in word_matches(compiled, data)] == expected, data
        first = word_search(compiled, data)
        assert (first.span() if first else None) == (expected[0] if expected else None)
        found_some += bool(expected)
        refused_some += len(compiled.findall(data)) > len(expected)
    # the generated inputs hold matches, and matches inside a word that are refused
    assert found_some >= 5 and refused_some >= 5


def test_a_refused_match_does_not_hide_the_next_one() -> None:
    # "reimport; import os" runs to the end of the line: refused at "re|import", the search
    # goes on inside it and finds "import os"
    compiled = re.compile(PATTERNS[-1])
    found = [m.group(0) for m in word_matches(compiled, b"x = reimport; import os\n")]
    assert found == [b"import os"]


def test_the_advice_tests_answer_as_their_word_boundary_forms() -> None:
    samples = [b"def rotate_half(x):", b"undef rotate_half(", b"class LlamaRMSNorm(", b"y=silu(x)"]
    samples += [b"subclass RMSNorm", b"act_silu(x)", b"x.transpose(0, 1).contiguous()"]
    for name in WHOLE_WORD:
        old = re.compile(rb"\b" + PATTERN_BYTES[name].pattern)
        for data in samples:
            assert bool(word_search(PATTERN_BYTES[name], data)) == bool(old.search(data))
