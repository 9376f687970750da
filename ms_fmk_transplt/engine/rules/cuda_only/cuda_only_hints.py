"""Cheap byte-level tests of rule cuda_only.guard, before any tree is built: could a file hold
CUDA-only code (hinted), or a condition the rule keeps (has_condition)?"""

from __future__ import annotations

import re
from functools import lru_cache

from ms_fmk_transplt.engine.project_facts import ProjectFacts
from ms_fmk_transplt.engine.word_search import word_search
from ms_fmk_transplt.tables.unsupported_table import UnsupportedTable

_HINT = re.compile(
    # triton, triton_ops, ops.triton.x -- not tritonclient
    rb"\bimport\s[^\n]*\btriton(?![A-Za-z0-9])|\bfrom\s+[\w.]*triton(?![A-Za-z0-9])"
    rb"|cpp_extension|\.cuh?[\"']|import\s+[\w.]*_cuda\b|_cuda\s+import|get_plugin"
    rb"|import_module\(\s*[\"'][\w.]*_cuda[\"']"
)
# every alternative of _HINT holds one of these: a file without any cannot match (searched for
# first: a search of the pattern tries each alternative at every byte, 3.3 s over diffusers)
_HINT_WORDS = (
    b"triton",
    b"cpp_extension",
    b'.cu"',
    b".cu'",
    b'.cuh"',
    b".cuh'",
    b"_cuda",
    b"get_plugin",
)
# on the line of a quoted "cuda": a comparison the rule could keep
_COMPARES = re.compile(rb"==|!=|\bin\b")
_REGISTRATIONS = (b"device_types", b"register_kernel", b"custom_op", b"triton_op", b".impl(")
_SKIP = re.compile(rb"skip(?:if|If|Unless)\(")


@lru_cache(maxsize=4)
def _library_imports(table: UnsupportedTable) -> re.Pattern[bytes]:
    """Imports of the CUDA-only libraries of the unsupported table (apex.normalization,
    flash_attn, xformers, ...)."""
    roots = sorted(
        {
            m.split(".")[0]
            for m, e in table.modules.items()
            if not e.supported and e.action == "manual" and table.libraries.kernel_library(m)
        }
    )
    words = b"|".join(re.escape(r.encode()) for r in roots) or b"(?!)"
    return re.compile(rb"(?:from|import)\s+(?:" + words + rb")\b")


@lru_cache(maxsize=8)
def hinted(source: bytes, table: UnsupportedTable, facts: ProjectFacts | None = None) -> bool:
    """Cheap test: could the file hold (or import from the project) CUDA-only code at all?"""
    if b"import" not in source and b"cpp_extension" not in source and b".cu" not in source:
        return False
    if _hint(source) or _library_imports(table).search(source) is not None:
        return True
    hint = facts.hint if facts is not None else None
    return hint is not None and has_condition(source) and word_search(hint, source) is not None


def _hint(source: bytes) -> bool:
    return any(w in source for w in _HINT_WORDS) and _HINT.search(source) is not None


@lru_cache(maxsize=8)
def has_condition(source: bytes) -> bool:
    """Cheap test: could the file hold a condition the rule keeps (``x.is_cuda``,
    ``t.device.type == "cuda"``, ``impl in ["ref", "cuda"]``, a skip decorator, a kernel
    registration)? Files without one need neither the rule nor the other modules' facts."""
    if b"is_cuda" in source or any(r in source for r in _REGISTRATIONS):
        return True
    if b"skip" in source and _SKIP.search(source):
        return True
    checked = -1  # the end of the last line looked at
    start = source.find(b"cuda")
    while start >= 0:  # literal searches: faster than one regex over the whole file
        if start > checked and source[start - 1 : start] in (b'"', b"'"):
            line_start = source.rfind(b"\n", 0, start) + 1
            line_end = source.find(b"\n", start)
            checked = line_end if line_end >= 0 else len(source)
            if _COMPARES.search(source, line_start, checked):
                return True
        start = source.find(b"cuda", start + 4)
    return False
