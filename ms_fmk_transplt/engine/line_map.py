"""Which line of the migrated file an input line became.

Usually only inserted lines move lines down (``Recorder.line_inserts``: ``shift_line``). A rewrite
that changes how many lines a statement takes (``-sim`` collapsing a multi-line call; removing
an argument on a line of its own) moves every later line too: then the two texts are aligned
line by line (difflib), so that change-list rows, open-work rows and ``# msft: ignore`` lines
below it still name, and restore, the right output line.
"""

from __future__ import annotations

import difflib

from ms_fmk_transplt.engine.recorder import shift_line


class LineMap:
    """Output line (1-based) of each input line."""

    def __init__(self, source: bytes, output: bytes, inserts: list[tuple[int, int]]) -> None:
        self.inserts = inserts
        self.aligned: list[int] | None = None
        src, out = source.splitlines(), output.splitlines()
        if len(out) != len(src) + sum(count for _, count in inserts):
            self.aligned = _aligned(src, out)
            self.end = len(out)

    def __call__(self, line: int) -> int:
        if self.aligned is None:
            return shift_line(line, self.inserts)
        if 1 <= line <= len(self.aligned):
            return self.aligned[line - 1]
        return self.end + line - len(self.aligned)  # past the last line (an insert at the end)


def _aligned(src: list[bytes], out: list[bytes]) -> list[int]:
    lines = [0] * len(src)
    matcher = difflib.SequenceMatcher(None, src, out, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                lines[i1 + k] = j1 + k + 1
        elif tag != "insert":  # replace / delete: each line to its likeliest output line
            _match_block(src, out, (i1, i2), (j1, j2), lines)
    return lines


def _match_block(
    src: list[bytes],
    out: list[bytes],
    old: tuple[int, int],
    new: tuple[int, int],
    lines: list[int],
) -> None:
    """Lines ``old`` of ``src`` became lines ``new`` of ``out``: each goes, in order, to the
    most similar line not before the previous one's (to the line after the block when the
    block was deleted)."""
    (i1, i2), (j1, j2) = old, new
    at = j1
    for i in range(i1, i2):
        if at >= j2:
            lines[i] = min(j2, len(out)) if j2 > j1 else j1 + 1
            continue
        best = max(
            range(at, j2),
            key=lambda j: (difflib.SequenceMatcher(None, src[i], out[j]).ratio(), -j),
        )
        lines[i] = best + 1
        # several input lines may share an output line only when the block got shorter
        at = best + 1 if j2 - best - 1 >= i2 - i - 1 else best
