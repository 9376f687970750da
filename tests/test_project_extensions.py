"""The CUDA extension modules a project builds (project_scan.extension_builds), and the rows of
their imports in the project's files (issue 43, build facts). The whole shape, with its near
misses, is the project fixture fixtures/projects/extensions (golden in fixtures/expected)."""

from __future__ import annotations

import dataclasses

import pytest
from helpers import tables_for

from ms_fmk_transplt.engine.migrate import migrate_source
from ms_fmk_transplt.engine.options import EngineOptions
from ms_fmk_transplt.engine.project_facts import ProjectFacts
from ms_fmk_transplt.scan.project_files import cmake_extensions
from ms_fmk_transplt.scan.project_scan import build_facts, extension_builds, facts_fingerprint

HEAD = "from torch.utils.cpp_extension import CUDAExtension, CppExtension, load, load_inline\n"


def builds(source: str, path: str = "setup.py") -> dict[str, str]:
    return extension_builds(path, source.encode(), tables_for().unsupported)


@pytest.mark.parametrize(
    ("source", "found"),
    [
        (HEAD + 'CUDAExtension("xentropy_cuda_lib", ["a.cpp", "k.cu"])', {"xentropy_cuda_lib"}),
        (HEAD + 'CUDAExtension(name="pkg._C", sources=["a.cpp"])', {"pkg._C"}),
        (
            "import torch.utils.cpp_extension as ce\nce.CUDAExtension('pkg._C', ['k.cu'])",
            {"pkg._C"},
        ),
        ("import torch\ntorch.utils.cpp_extension.CUDAExtension('m', ['k.cu'])", {"m"}),
        (HEAD + 'CppExtension("pkg.ln", sources=["ln.cpp", "ln_kernel.cu"])', {"pkg.ln"}),
        (HEAD + 'CppExtension("pkg.cpu", ["ops.cpp"])', set()),  # C++ only
        (HEAD + 'load(name="ln", sources=["ln.cpp", "ln.cu"])', {"ln"}),
        (HEAD + 'load("ln", ["ln.cpp"])', set()),
        (HEAD + 'load("ln", ["ln.cpp"], with_cuda=True)', {"ln"}),
        (HEAD + 'load_inline(name="k", cpp_sources=CPP, cuda_sources=CUDA)', {"k"}),
        (HEAD + 'load_inline("k", CPP, CUDA)', {"k"}),
        (HEAD + 'load_inline("k", CPP, cuda_sources=None)', set()),
        (HEAD + 'load_inline("k", cpp_sources=CPP)', set()),
        (HEAD + 'CUDAExtension(NAME, ["k.cu"])', set()),  # not a literal name
        (HEAD + 'CUDAExtension(f"{pkg}._C", ["k.cu"])', set()),
        ('CUDAExtension("m", ["k.cu"])  # cpp_extension not imported', set()),
        (HEAD + '# CUDAExtension("m", ["k.cu"])\nx = \'CUDAExtension("m", ["k.cu"])\'', set()),
        (HEAD + "def CUDAExtension(*a): ...\n", set()),
        (HEAD + "CUDAExtension(", set()),  # unreadable: reported when migrated
    ],
)
def test_the_extensions_a_setup_py_builds(source: str, found: set[str]) -> None:
    assert set(builds(source)) == found


def test_an_extension_class_builds_in_a_setup_py_only_and_says_where() -> None:
    source = HEAD + '\n\nCUDAExtension("pkg._C", ["k.cu"])\nload("ln", ["ln.cu"])\n'
    assert builds(source) == {"pkg._C": "setup.py:4", "ln": "setup.py:5"}
    assert builds(source, "pkg/build.py") == {"ln": "pkg/build.py:5"}
    assert builds(source, "sub/setup.py") == {"pkg._C": "sub/setup.py:4", "ln": "sub/setup.py:5"}


def test_a_name_a_python_module_of_the_project_has_is_no_extension() -> None:
    setup = HEAD + 'CUDAExtension("pkg._C", ["k.cu"])\nCUDAExtension("pkg.plain", ["p.cu"])\n'
    files = [("setup.py", setup.encode()), ("src/pkg/plain.py", b"x = 1\n")]
    facts = build_facts(files, tables_for().unsupported)
    assert facts.extensions == {"pkg._C": "setup.py:2"}


def test_the_fingerprint_of_facts_without_extensions_is_unchanged() -> None:
    assert facts_fingerprint(ProjectFacts()) == repr(([], []))
    assert "pkg._C" in facts_fingerprint(ProjectFacts(extensions={"pkg._C": "setup.py:2"}))


def _options() -> EngineOptions:
    facts = ProjectFacts(extensions={"xentropy_lib": "setup.py:7", "pkg._C": "setup.py:8"})
    return dataclasses.replace(EngineOptions(), project=facts)


def rows(source: str, path: str = "train.py") -> list[tuple[int, str]]:
    tables = tables_for()
    result = migrate_source(source.encode(), path, tables, _options())
    return [(n.line, n.api) for n in result.notices if n.rule == "unsupported.custom_cuda_code"]


def test_every_import_of_an_extension_is_a_row() -> None:
    source = (
        "import importlib\nimport xentropy_lib\nimport pkg._C as C\nfrom pkg import _C\n"
        "from pkg._C import f, g\nfrom pkg import other\n"
        "m = importlib.import_module('xentropy_lib')\n"
        "# import xentropy_lib\nNAME = 'xentropy_lib'\n"
    )
    # one row per file and API, listing the lines of its uses (issue 46)
    assert rows(source) == [(2, "xentropy_lib"), (3, "pkg._C"), (5, "pkg._C.f"), (5, "pkg._C.g")]
    result = migrate_source(source.encode(), "train.py", tables_for(), _options())
    uses = [n.message.split(";")[0] for n in result.notices if n.api in ("xentropy_lib", "pkg._C")]
    assert uses == ["2 uses in this file (lines 2, 7)", "2 uses in this file (lines 3, 4)"]


def test_a_relative_import_of_an_extension_is_a_row() -> None:
    assert rows("from . import _C\nfrom .layers import Dense\n", "pkg/__init__.py") == [
        (1, "pkg._C")
    ]
    assert rows("from ._C import f\n", "pkg/ops.py") == [(1, "pkg._C.f")]
    assert rows("from . import _C\n", "other/__init__.py") == []


def test_the_row_names_where_the_extension_is_built() -> None:
    tables = tables_for()
    facts = ProjectFacts(extensions={"xentropy_lib": "setup.py:7"})
    options = dataclasses.replace(EngineOptions(), project=facts)
    result = migrate_source(b"import xentropy_lib\n", "train.py", tables, options)
    (notice,) = [n for n in result.notices if n.rule == "unsupported.custom_cuda_code"]
    assert "built by setup.py:7 as a CUDA extension" in notice.tip


@pytest.mark.parametrize(
    ("source", "imports"),
    [
        (b"from pkg import _C\n", True),
        (b"import pkg._C as C\n", True),
        (b"    from pkg._C import forward\n", True),
        (b"from pkg import (\n    other,\n    _C,\n)\n", True),
        (b"import xentropy_lib\n", True),
        (b"mod = importlib.import_module('pkg._C')\n", True),
        (b"x = torch._C._get_tracing_state()\n", False),  # a word of code, not an import
        (b"TORCH_CUDA_ARCH_LIST = '8.0'\nMAX_C = 3\n", False),
        (b"import torch\n# from pkg import _C\n", False),  # a comment does not start an import
        (b"from pkg import _Cx\n", False),
    ],
)
def test_only_a_file_that_may_import_an_extension_is_a_candidate(
    source: bytes, imports: bool
) -> None:
    """The prefilter's and the span pass's test: a short extension name (``_C``) made every
    file holding the letters a candidate (25% slower on the CI budget's sample)."""
    facts = ProjectFacts(extensions={"xentropy_lib": "setup.py:7", "pkg._C": "setup.py:8"})
    assert facts.extension_import is not None
    assert bool(facts.extension_import.search(source)) is imports
    assert ProjectFacts().extension_import is None


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("pybind11_add_module(fast_rope rope.cpp rope_kernel.cu)", {"fast_rope": "C.txt:1"}),
        (
            "project(x LANGUAGES CXX CUDA)\n\npybind11_add_module(ops ${SOURCES})",
            {"ops": "C.txt:3"},
        ),
        ("enable_language(CUDA)\nnanobind_add_module(nb_ops ops.cpp)", {"nb_ops": "C.txt:2"}),
        ("add_library(k MODULE k.cu)\nadd_library(s STATIC s.cu)", {"k": "C.txt:1"}),
        # near misses: C++ only, a CUDA word in a comment, a linked (not imported) library
        ("project(x LANGUAGES CXX)\npybind11_add_module(cpu_tools tools.cpp)", {}),
        ("# LANGUAGES CUDA\npybind11_add_module(cpu_tools tools.cpp)", {}),
        ("add_library(kernels SHARED k.cu)", {}),
    ],
)
def test_cmake_extensions(text: str, found: dict[str, str]) -> None:
    assert cmake_extensions("C.txt", text) == found
