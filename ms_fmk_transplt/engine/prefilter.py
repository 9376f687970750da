"""Cheap byte-level test run before any CST work: a file that cannot contain anything the rules
act on or report is copied without parsing. Conservative: a false positive only costs a parse."""

from __future__ import annotations

import re
from functools import lru_cache

from ms_fmk_transplt.engine.options import EngineOptions
from ms_fmk_transplt.engine.word_search import WORD_BYTES
from ms_fmk_transplt.tables import Tables

BASE_TRIGGERS = (
    b"cuda",
    b"nccl",
    b"NCCL",
    b"cudnn",
    b"cuDNN",
    b"nvidia-smi",
    b"nvcc",
    b"--tf32",
    b"DataParallel",
    b"data_parallel",
    b"ops.",
    b"cpp_extension",
    b"CUDA",
    b"CUBLAS",
    b"autocast_gpu",  # torch.get_autocast_gpu_dtype(): the CUDA autocast state
    b"is_autocast_enabled()",
    b"GradScaler(",  # torch.amp.GradScaler() defaults to "cuda" (amp.scaler_device)
    # TensorFlow files (the tf family; it acts only on files that import TensorFlow)
    b"import tensorflow",
    b"from tensorflow",
    b"tf_keras",
    b"npu_bridge",
    b"npu_device",
    b"horovod.tensorflow",
    b"horovod.keras",
)


@lru_cache(maxsize=8)
def triggers(tables: Tables) -> tuple[bytes, ...]:
    """What may_need_migration looks for as a substring, without those holding another one
    (``cuda_device`` is found when ``cuda`` is: each is one more scan of every file)."""
    # integer device indices (x.to(local_rank)) need no "cuda" anywhere in the file
    names = {n.encode() for n in tables.int_device.identifiers | tables.int_device.sequences}
    words = BASE_TRIGGERS + tuple(sorted(names))
    return tuple(w for w in words if not any(o != w and o in w for o in words))


_IDENTIFIER = re.compile(rb"[A-Za-z0-9_]+")


@lru_cache(maxsize=8)
def library_roots(tables: Tables) -> tuple[frozenset[bytes], tuple[bytes, ...]]:
    """The libraries' top-level names: those that are one word, and the others."""
    roots = {w.encode() for w in tables.unsupported.libraries.words}
    words = frozenset(r for r in roots if _IDENTIFIER.fullmatch(r))
    return words, tuple(sorted(roots - words))


def names_library(source: bytes, roots: tuple[frozenset[bytes], tuple[bytes, ...]]) -> bool:
    """Whether a listed library's top-level name occurs as a whole word (a short root like
    ``fla`` must not fire on ``flatten``): the one-word names among the file's words (one scan
    of the file, not one per name), the others by literal search."""
    words, others = roots
    if not words.isdisjoint(_IDENTIFIER.findall(source)):
        return True
    for root in others:
        start = source.find(root)
        while start >= 0:
            end = start + len(root)
            before = source[start - 1] if start else 32
            after = source[end] if end < len(source) else 32
            if before not in WORD_BYTES and after not in WORD_BYTES:
                return True
            start = source.find(root, end)
    return False


def may_need_migration(
    source: bytes, tables: Tables, options: EngineOptions, path: str = ""
) -> bool:
    if options.tf_notebook_style and any(
        name.encode() in source for name, _ in options.tf_notebook_imports
    ):
        return True  # a cell of a TensorFlow notebook naming what another cell imports
    if any(token in source for token in triggers(tables)):
        return True
    if names_library(source, library_roots(tables)):
        return True
    facts = options.project  # an import of a CUDA extension the project builds
    if facts is not None and facts.extension_import is not None:
        if facts.extension_import.search(source):
            return True
    if facts is not None and facts.deps is not None and facts.deps.words is not None:
        if facts.deps.words.search(source):
            return True  # a file naming a library --deps analysed
    if facts is not None and facts.assessed is not None and path in facts.assessed.files:
        return True  # a file whose lines kit assess saw reach an API (--assessed)
    if facts is not None and path in facts.programs.tf2_entries:
        return True  # the entry of a TF 2.x program: the NPU device is opened there
    rules = options.user_rules
    return rules is not None and any(name.encode() in source for name in rules.names())
