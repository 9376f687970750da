"""A real-shaped sample for benchmarks/budget.py, built from what the repository holds.

Real model zoos hold .py files of some 20 KB on average (huggingface/diffusers: 2,089 files,
45 MB), where the per-file engine cost, not start-up, decides a run's time. The fixtures are
small (under 1 KB each, most of them), so each sample file is a concatenation of *pieces*:

* the .py files of fixtures/projects/* and the rule fixtures' inputs (fixtures/rules/*/*.py,
  not the ``.expected.py``), each a module that Python parses on its own;
* the synthetic zoo's templates (benchmarks/synthetic_zoo.py), filled with varied values.

A piece is left out when Python cannot parse it as text, when it opts out of the tool
(``# msft: skip-file``) or when it names TensorFlow (a PyTorch zoo does not mix frameworks);
``from __future__`` lines are dropped (they must come first in a module). A piece naming
CUDA (``cuda``, ``nccl``, ``cudnn``...) is a *CUDA piece*; a *plain piece* names none and is a
project's file, a zoo template or a rule fixture the tool leaves as written without a report
row (real code without CUDA gives no rows).

Each file gets a size from a log-normal law (median ``MEDIAN`` bytes, from ``SMALLEST`` to
``LARGEST``, plus the piece that crosses it) and a kind: about a third of the files need
changes (``HEAVY`` of them draw ``HEAVY_SHARE`` of their pieces among the CUDA ones: many CUDA
lines; ``LIGHT`` draw one CUDA piece and ``LIGHT_SHARE`` of the rest), the others are plain,
as in a real zoo. Pieces are drawn until the file reaches its size; every file is checked to
parse. All draws come from ``random.Random(SEED)``: the same checkout builds the same bytes
(FILES files, some 12 MB, median about 10 KB: tests/test_budget.py checks the shape).
"""

from __future__ import annotations

import ast
import math
import random
import re
from pathlib import Path

from synthetic_zoo import DATA, EVAL, MODEL, TRAIN, UTILS, template_values

SEED = 0
FILES = 1000  # .py files in the sample
PER_FOLDER = 40
MEDIAN = 10_000  # bytes: the median file's size (log-normal law, sigma SIGMA)
SIGMA = 0.6
SMALLEST, LARGEST = 2_000, 60_000
HEAVY, LIGHT = 0.12, 0.21  # shares of files with many CUDA pieces / one or a few
HEAVY_SHARE, LIGHT_SHARE = 0.3, 0.03  # the share of CUDA pieces in those files
VARIANTS = 40  # fillings of each synthetic_zoo template
CUDA = re.compile(rb"cuda|nccl|cudnn|CUDA|\.cu\b|gpu")
FUTURE = re.compile(rb"^from __future__ import[^\n]*\n", re.MULTILINE)


def as_piece(data: bytes) -> bytes | None:
    """``data`` as a piece (from ``__future__`` lines dropped), or None when left out."""
    if b"msft: skip-file" in data or b"tensorflow" in data:
        return None
    data = FUTURE.sub(b"", data)
    if not data.endswith(b"\n"):
        data += b"\n"
    try:
        ast.parse(data.decode("utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None
    return data


def _zoo_pieces() -> list[bytes]:
    rnd = random.Random(SEED)
    pieces = []
    for template in (MODEL, UTILS, DATA, TRAIN, EVAL):
        for i in range(VARIANTS):
            values = template_values(rnd, i, f"block_{i:02d}", f"Block{i}")
            pieces.append(template.format(**values).encode())
    return pieces


def _silent(path: Path) -> bool:
    """A rule fixture the tool leaves as written (its ``.expected.py`` is missing or equal)
    without a report row (no ``.unsupported.csv`` / ``.advice.csv``)."""
    case = path.name[: -len(".py")]
    if any(path.with_name(f"{case}.{kind}.csv").exists() for kind in ("unsupported", "advice")):
        return False
    expected = path.with_name(f"{case}.expected.py")
    return not expected.exists() or expected.read_bytes() == path.read_bytes()


def pieces(repo: Path) -> tuple[list[bytes], list[bytes]]:
    """The CUDA pieces and the plain pieces, each list in a fixed order: a plain piece names
    no CUDA and is a zoo template without CUDA, a project's file or a rule fixture the tool
    leaves as written
    without a row."""
    fixtures = repo / "fixtures"
    projects = sorted(p for p in (fixtures / "projects").rglob("*.py") if p.is_file())
    rules = sorted(
        p
        for p in (fixtures / "rules").glob("*/*.py")
        if p.is_file() and not p.name.endswith(".expected.py")
    )
    found = [(as_piece(p.read_bytes()), True) for p in projects]
    found += [(as_piece(p.read_bytes()), _silent(p)) for p in rules]
    found += [(as_piece(z), True) for z in _zoo_pieces()]
    cuda = [p for p, _ in found if p is not None and CUDA.search(p)]
    plain = [p for p, same in found if p is not None and same and not CUDA.search(p)]
    return cuda, plain


def _size(rnd: random.Random) -> int:
    return min(LARGEST, max(SMALLEST, int(MEDIAN * math.exp(rnd.gauss(0.0, SIGMA)))))


def _kind(rnd: random.Random) -> float:
    """The share of CUDA pieces in a file: most of them, one or two, or none."""
    draw = rnd.random()
    if draw < HEAVY:
        return HEAVY_SHARE
    return LIGHT_SHARE if draw < HEAVY + LIGHT else 0.0


def compose(rnd: random.Random, cuda: list[bytes], plain: list[bytes]) -> bytes:
    """One file's bytes: pieces drawn until its size is reached (one CUDA piece at least,
    when its kind has CUDA)."""
    size, share = _size(rnd), _kind(rnd)
    parts = [rnd.choice(cuda)] if share else []
    total = sum(map(len, parts))
    while total < size:
        part = rnd.choice(cuda if rnd.random() < share else plain)
        parts.append(part)
        total += len(part)
    return b"\n".join(parts)


def build(target: Path, repo: Path, files: int = FILES) -> list[Path]:
    """The sample's ``files`` .py files under ``target`` (which must not exist), sorted."""
    cuda, plain = pieces(repo)
    rnd = random.Random(SEED)
    written = []
    for i in range(files):
        data = compose(rnd, cuda, plain)
        ast.parse(data)  # a piece that broke its neighbours would fail here, on every run
        path = target / f"pkg_{i // PER_FOLDER:03d}" / f"module_{i:04d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.append(path)
    return sorted(written)
