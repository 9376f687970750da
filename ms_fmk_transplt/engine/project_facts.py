"""What one file of a project tells the others: the CUDA-only code each module defines.

A guard in ``tests/test_swiglu.py`` (``@skipUnless(torch.cuda.is_available())``) or in
``model.py`` (``if x.is_cuda: return fused_op(x)``) selects CUDA-only code that another module
of the project defines (a Triton kernel, a ``.cu`` plugin). The pipeline reads every Python file
of the input once, before migrating, and keeps for each module the names cuda_only_names finds
in it (one level: a module's own CUDA-only code, and what it imports from CUDA-only libraries).
(project_scan.py reads them.) The engine then counts ``from <project module> import <such
name>`` as CUDA-only code too.
Also kept: the operator namespaces the project registers in Python (``torch.library``), so a
``torch.ops.<namespace>.<op>`` call in another file is the project's own operator; and the
CUDA extension modules the project builds (project_scan.py reads them: a setup.py's
``CUDAExtension("pkg._C", ...)``, ``cpp_extension.load(name=..., sources=[...".cu"])``), so
an import of one in any file (``from pkg import _C``) is reported as a ``*_cuda`` module's is.

And the project's own top-level modules and packages (own_modules, from the paths alone): a
module the input holds is the project's whatever its name (gpt-neox's ``megatron/`` is not
Megatron-LM), never reported as the third-party library of that name (libraries/library_rows.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePosixPath
from typing import Protocol

from ms_fmk_transplt.engine.assess_facts import AssessFacts
from ms_fmk_transplt.engine.library_facts import DepsFacts
from ms_fmk_transplt.engine.program_facts import ProgramFacts


def module_name(rel_path: str) -> str:
    """``pkg/ops/fused.py`` -> ``pkg.ops.fused``; ``pkg/__init__.py`` -> ``pkg``."""
    parts = list(PurePosixPath(rel_path).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def absolute_module(module: str, level: int, importer: str) -> str:
    """The module ``from <module> import`` (``level`` dots) names in the file ``importer``."""
    if not level:
        return module
    package = module_name(importer).split(".")
    if not importer.endswith("__init__.py"):
        package = package[:-1]
    if level > 1:
        package = package[: len(package) - (level - 1)]
    return ".".join([*package, module] if module else package)


_ASCEND_FOLDER = re.compile(r"(?:^|_)(?:ascend|npu)(?:_|$)", re.I)
# a Triton kernel file written for the NPU: it imports triton and asks the NPU itself (its
# device through torch.npu / torch_npu, its AI core count, triton-ascend by name)
_TRITON_IMPORT = re.compile(rb"(?:^|[\r\n])[ \t]*(?:from|import)[ \t]+triton\b")  # any line end
_ASCEND_QUERY = re.compile(
    rb"torch\.npu\b|\btorch_npu\b|\btriton_ascend\b|\bnum_aicore\b|\bnum_vectorcore\b"
    rb"|\bget_npu_properties\b"
)


def ascend_kernel_source(source: bytes) -> bool:
    """Whether a file is a Triton kernel file written for the NPU (it imports triton and asks
    the NPU itself: ``torch.npu.current_device()``, the AI core count)."""
    return (
        b"triton" in source
        and _TRITON_IMPORT.search(source) is not None
        and _ASCEND_QUERY.search(source) is not None
    )


@dataclass(frozen=True, eq=False)
class ProjectFacts:
    """module (dotted, from the input root) -> {name: what CUDA-only code it is}."""

    cuda_only: dict[str, dict[str, str]] = field(default_factory=dict)
    # operator namespaces the project registers in Python (torch.library): its own torch.ops.*
    op_namespaces: frozenset[str] = frozenset()
    # CUDA extension modules the project builds: importable dotted name -> where ("setup.py:12")
    extensions: dict[str, str] = field(default_factory=dict)
    # the top-level modules and packages the project holds (project_scan.own_modules)
    own_modules: frozenset[str] = frozenset()
    # folders holding the project's own Triton kernels for the NPU (project_scan.py)
    ascend_kernels: frozenset[str] = frozenset()
    # the programs of the input (program_model.py): entry points, TensorFlow versions
    programs: ProgramFacts = field(default_factory=ProgramFacts)
    # --deps: what the installed libraries' APIs the project calls reach (None: not asked)
    deps: DepsFacts | None = None
    # --assessed: what a run of kit assess saw the training steps run (None: not asked)
    assessed: AssessFacts | None = None
    _by_name: dict[str, list[str]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        # an import names a module by its path from a package root, which may be below the
        # input root (src/pkg/mod.py is imported as pkg.mod): index every dotted suffix
        for module in sorted(self.cuda_only):
            parts = module.split(".")
            for i in range(len(parts)):
                self._by_name.setdefault(".".join(parts[i:]), []).append(module)

    @cached_property
    def hint(self) -> re.Pattern[bytes] | None:
        """Matches a file that may import one of these modules (cheap test before parsing;
        searched with word_search: a leading \\b would make the search slow)."""
        tails = sorted({m.rsplit(".", 1)[-1] for m in self.cuda_only if m})
        if not tails:
            return None
        return re.compile(rb"(?:" + b"|".join(re.escape(t.encode()) for t in tails) + rb")\b")

    @cached_property
    def extension_words(self) -> tuple[bytes, ...]:
        """The last parts of the extension modules' names: a file naming none imports none."""
        return tuple(sorted({m.rsplit(".", 1)[-1].encode() for m in self.extensions}))

    @cached_property
    def extension_import(self) -> re.Pattern[bytes] | None:
        """Matches where a file may import one of the extensions (the cheap test before parsing):
        an import statement naming the last part of one's name as a word, on its first line or
        inside its parentheses (``from pkg import _C``, ``import xentropy_lib as x``, ``from
        pkg._C import f``, a parenthesised list over lines), or ``import_module(...)`` of it. A
        word elsewhere (``torch._C`` in code, ``TORCH_CUDA``) is not an import: such files are
        not analysed for it (a short name such as ``_C`` made every file a candidate)."""
        if not self.extensions:
            return None
        word = (
            rb"(?<![\w])(?:" + b"|".join(re.escape(w) for w in self.extension_words) + rb")(?![\w])"
        )
        return re.compile(
            rb"^[ \t]*(?:from|import)[ \t][^\n]*?"
            + word
            + rb"|^[ \t]*from[ \t][^\n]*?import[ \t]*\([^)]*?"
            + word
            + rb"|import_module\([^)]*?"
            + word,
            re.M,
        )

    def extension(self, dotted: str) -> tuple[str, str] | None:
        """The project's CUDA extension ``dotted`` (an imported name) is or is inside, with
        where it is built; None for any other name."""
        if not self.extensions:
            return None
        cut = len(dotted)
        while cut != -1:
            name = dotted[:cut]
            where = self.extensions.get(name)
            if where is not None:
                return name, where
            cut = dotted.rfind(".", 0, cut)
        return None

    def ascend_kernel_file(self, rel_path: str) -> bool:
        """Whether a file (path from the input root) is one of the project's own kernels for
        the NPU: in a folder named for it (``backends/triton_ascend/``, ``npu/``) or in a folder
        where a Triton file asks the NPU itself (``ascend_kernels``)."""
        folder = rel_path.replace("\\", "/").rpartition("/")[0]
        if folder in self.ascend_kernels:
            return True
        return any(_ASCEND_FOLDER.search(part) for part in folder.split("/"))

    def owns(self, module: str) -> bool:
        """Whether the module an absolute import names (``megatron.mpu``) is the project's own:
        its top-level name is one of own_modules."""
        return module.split(".", 1)[0] in self.own_modules

    def names(self, module: str, level: int, importer: str) -> dict[str, str]:
        """The CUDA-only names of the module ``from <module> import`` (``level`` dots) reads in
        the file ``importer`` (a path from the input root); {} when unknown or ambiguous."""
        module = absolute_module(module, level, importer)
        found = self._by_name.get(module, [])
        return self.cuda_only[found[0]] if len(found) == 1 else {}


class _WithProject(Protocol):
    """EngineOptions, as far as project_op_namespaces reads them (options.py imports this)."""

    @property
    def project(self) -> ProjectFacts | None: ...


def project_op_namespaces(options: _WithProject | None) -> frozenset[str]:
    """The operator namespaces the run's project registers (engine options' facts)."""
    facts = options.project if options is not None else None
    return facts.op_namespaces if facts is not None else frozenset()
