"""Where in a file the rules can act: the lines holding an anchor word, and the statements
(units) that contain them. Only units are walked; the rest of the file is never visited.

An anchor is a word without which no built-in rule can fire on a statement: ``cuda``, ``nccl``,
``device`` (integer device indices), ``.to``, the leaf of every unsupported API, the root of every
CUDA-only library (the listed parts and argument keywords of a device-neutral one), the root of
every library that takes a device of its own (rules/device_consumers.json), plus, per
file, each name an import binds to a path holding one of those words
(``import torch.cuda as tc`` makes ``tc`` an anchor). tests/test_anchor_pattern.py checks that every
entry of the tables can be reached this way.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache

from ms_fmk_transplt.engine.statements import tree_statements
from ms_fmk_transplt.tables import Tables

BASE_WORDS = (
    "cuda",
    "CUDA",
    "nccl",
    "NCCL",
    "cudnn",
    "cuDNN",  # "cuDNN error" in str(e) (expected_errors.cuda_message)
    "nvidia-smi",  # NVIDIA command-line tools run by the code (unsupported.nvidia_tool)
    "nvcc",
    "--tf32",  # a command line in a string turning TF32 on (unsupported.launch_config)
    "CUBLAS",
    ".cu",  # CUDA sources named in cpp_extension.load(...)
    "device",  # torch.device(rank), device=local_rank
    "DataParallel",
    "data_parallel",
    "nvtx",
    "ops",  # torch.ops.<extension>
    "cpp_extension",
    "autocast_gpu",  # torch.get_autocast_gpu_dtype(): the CUDA autocast state
    "is_autocast_enabled",
    "GradScaler",  # torch.amp.GradScaler() defaults to "cuda" (amp.scaler_device)
)
TO_CALL = rb"\.\s*to\b"  # x.to(local_rank)
TO_CALL_PATTERN = re.compile(TO_CALL)


@lru_cache(maxsize=8)
def anchor_words(tables: Tables) -> tuple[str, ...]:
    libraries = set(tables.unsupported.libraries.line_words) | tables.device_consumers.roots
    return tuple(sorted(set(BASE_WORDS) | libraries, key=lambda w: (-len(w), w)))


@lru_cache(maxsize=8)
def anchor_pattern(tables: Tables, extra_words: tuple[str, ...] = ()) -> re.Pattern[bytes]:
    """The anchor words and ``.to``; ``extra_words``: those of the options the span pass runs
    (-s rewrites ``"npu:1"``)."""
    words = b"|".join(re.escape(w.encode()) for w in (*anchor_words(tables), *extra_words))
    return re.compile(words + b"|" + TO_CALL)


def alias_pattern(tables: Tables, bound: dict[str, str]) -> re.Pattern[bytes] | None:
    """Names bound by imports to a path that holds an anchor (``tc`` for torch.cuda)."""
    words = anchor_pattern(tables)
    aliases = sorted(
        {name for name, path in bound.items() if words.search(path.encode())} - {""},
        key=lambda w: (-len(w), w),
    )
    if not aliases:
        return None
    names = b"|".join(re.escape(a.encode()) for a in aliases)
    return re.compile(rb"(?<![A-Za-z0-9_])(?:" + names + rb")(?![A-Za-z0-9_])")


def anchor_lines(
    data: bytes, patterns: list[re.Pattern[bytes]], words: tuple[bytes, ...] = ()
) -> list[int]:
    """Sorted line numbers (1-based) holding a match of any pattern or any of ``words``
    (found with bytes.find: faster than a regular expression alternating between them; once
    a word is found on a line, it is looked for from the next line on)."""
    starts = [m.start() for pattern in patterns for m in pattern.finditer(data)]
    for word in shortest_words(words):
        at = data.find(word)
        while at >= 0:
            starts.append(at)
            end = data.find(b"\n", at + len(word))
            at = data.find(word, end + 1) if end >= 0 else -1
    return lf_line_numbers(data, starts)


@lru_cache(maxsize=32)
def shortest_words(words: tuple[bytes, ...]) -> tuple[bytes, ...]:
    """``words`` without those holding another of them (a line holding ``dask_cuda`` holds
    ``cuda``): the same lines hold one, in fewer searches of the file (108 words -> 78)."""
    return tuple(
        w
        for i, w in enumerate(words)
        if not any(o in w and o != w for o in words) and w not in words[:i]
    )


_LINE_END = re.compile(rb"\r\n|\r|\n")


def line_starts(data: bytes) -> list[int]:
    """The offset of each line of ``data``, lines ending as Python reads them (LF, CRLF or
    CR): line N starts at ``line_starts(data)[N - 1]``."""
    return [0, *(m.end() for m in _LINE_END.finditer(data))]


def lf_line_numbers(data: bytes, offsets: list[int]) -> list[int]:
    """The 1-based lines (sorted, once each) of ``offsets`` in ``data`` whose line breaks are
    LF only: the breaks counted between the offsets in order, not a table of every line."""
    lines: list[int] = []
    line, pos = 1, 0
    count = data.count
    for start in sorted(offsets):
        if start != pos:
            line += count(b"\n", pos, start)
            pos = start
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


@lru_cache(maxsize=8)
def anchor_bytes(tables: Tables) -> tuple[bytes, ...]:
    """The anchor words, for anchor_lines (the pattern adds ``.to``: TO_CALL_PATTERN)."""
    return tuple(w.encode() for w in anchor_words(tables))


def import_statements(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of the file, in source order (statements only are visited)."""
    return list(tree_statements(tree).imports)
