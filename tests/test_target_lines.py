"""engine/target_scan.py: the lines of the offsets the target scan walks, as the stdlib parser
counts them: a file with LF line breaks only counts them between the offsets, one with CR
finds every break (CRLF, CR, LF); both give the line of each offset."""

from __future__ import annotations

import random
from bisect import bisect_left

import pytest

from ms_fmk_transplt.engine.target_scan import _lines


def _expected(source: bytes, offsets: list[int]) -> list[int]:
    """Each offset's line from the list of where each line starts."""
    starts = [0]
    i = 0
    while i < len(source):
        if source[i : i + 2] == b"\r\n":
            i += 2
            starts.append(i)
            continue
        if source[i : i + 1] in (b"\r", b"\n"):
            starts.append(i + 1)
        i += 1
    return sorted({bisect_left(starts, offset + 1) for offset in offsets})


@pytest.mark.parametrize("breaks", [(b"\n",), (b"\r\n", b"\n"), (b"\r", b"\n", b"\r\n")])
def test_lines_of_offsets(breaks: tuple[bytes, ...]) -> None:
    rng = random.Random(32)
    for _ in range(200):
        parts = [rng.choice([b"x", b"ab", b"", *breaks]) for _ in range(rng.randrange(1, 40))]
        source = b"".join(parts)
        if not source:
            continue
        offsets = [rng.randrange(len(source)) for _ in range(rng.randrange(1, 6))]
        assert _lines(source, [], offsets) == _expected(source, offsets), (source, offsets)


def test_line_numbers_of_an_lf_file() -> None:
    source = b"a\n\nb = 1\nc\n"
    assert _lines(source, [], [0, 3, 4, 9]) == [1, 3, 4]
    assert _lines(source, [], []) == []
