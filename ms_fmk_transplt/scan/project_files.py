"""What the input's files other than its Python modules say of its programs (program_model.py
and project_scan.py ask): the TensorFlow a folder pins (requirements*.txt, setup.py, setup.cfg,
pyproject.toml, environment.yml, Dockerfile ``FROM`` images), the scripts its shell launchers
run (``python x.py``, ``torchrun x.py``, ``horovodrun -np 8 python x.py``) and its packaging
declares (console scripts, ``entry_points``), the CUDA extension modules its CMakeLists.txt
files build (``pybind11_add_module(name ... kernel.cu)``). Each such file is read once
(read_other_files).

A pin applies to the folder holding its file and every folder below; the nearest one above a
program's entry decides. A folder pinning both major versions pins none."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ms_fmk_transplt.safety.regular_files import read_small_regular

MAX_BYTES = 2**20  # a larger requirements file or launcher is no such file
REQUIREMENT_FILES = re.compile(
    r"(?:^|/)(?:[^/]*requirements[^/]*\.(?:txt|in)|constraints[^/]*\.txt)$"
)
PACKAGING_FILES = frozenset({"setup.py", "setup.cfg", "pyproject.toml"})
CONDA_FILES = re.compile(r"(?:^|/)(?:environment|conda)[^/]*\.ya?ml$")
DOCKER_FILES = re.compile(r"(?:^|/)(?:Dockerfile[^/]*|[^/]*\.[Dd]ockerfile)$")
LAUNCHERS = re.compile(r"\.(?:sh|bash)$")
CMAKE_FILES = frozenset({"CMakeLists.txt"})

# tensorflow / tensorflow-gpu / tensorflow-cpu / tf-nightly / intel-tensorflow with a version
_PIN = re.compile(
    r"(?<![\w.-])(?:intel-)?(tensorflow(?:[-_](?:gpu|cpu|macos))?|tf-nightly(?:-gpu)?)"
    r"\s*(?:\[[^\]]*\])?\s*((?:(?:==|>=|<=|~=|!=|===|>|<|=)\s*[0-9][0-9a-z.*]*\s*,?\s*)+)",
    re.I,
)
# nvcr.io/nvidia/tensorflow:20.06-tf1-py3, tensorflow/tensorflow:1.15.5-gpu-py3
_IMAGE = re.compile(r"(?:nvcr\.io/nvidia/tensorflow|(?<![\w/])tensorflow/tensorflow):([\w.-]+)")
# NVIDIA Merlin's TensorFlow images (merlin-tensorflow, merlin-tensorflow-training) ship TF 2
_MERLIN = re.compile(r"nvcr\.io/nvidia/merlin/merlin-tensorflow[\w-]*:[\w.-]+")
_CLAUSE = re.compile(r"(==|>=|<=|~=|!=|===|>|<|=)\s*([0-9]+)(?:\.([0-9]+))?")
_RUN = re.compile(
    r"(?:^|[\s;&|(`])(?:python[0-9.]*|torchrun|horovodrun|mpirun|deepspeed|accelerate\s+launch)"
    r"\b[^\n#]*?(?<![\w./-])((?:[\w.-]+/)*[\w.-]+\.py)\b"
)
# ``python -m pkg.mod``, ``torchrun --nproc_per_node=8 -m pkg.mod``: a module run from the
# launcher's working folder
_LAUNCHER = re.compile(
    r"(?:^|[\s;&|(`])(?:python[0-9.]*|torchrun|deepspeed|accelerate\s+launch)(?![\w.-])"
)
_MODULE_RUN = re.compile(r"(?<!\S)-m[ \t]+([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
_SCRIPT = re.compile(r"""[\w.-]+\s*=\s*['"]?\s*([A-Za-z_][\w.]*)\s*:\s*[A-Za-z_][\w.]*""")


@dataclass(frozen=True)
class Pin:
    major: str  # "1" / "2"
    where: str  # "requirements.txt:3 tensorflow-gpu==1.15.5"


def _major(spec: str) -> str:
    """The major version a requirement's clauses allow ("" when both or neither)."""
    low, high = 0, 99
    for op, major_text, minor_text in _CLAUSE.findall(spec):
        major = int(major_text)
        minor = int(minor_text or 0)
        if op in ("==", "===", "=", "~="):
            low = high = major
        elif op in (">=", ">"):
            low = max(low, major)
        elif op == "<":
            high = min(high, major - 1 if minor == 0 else major)
        elif op == "<=":
            high = min(high, major)
    if low == high and low in (1, 2):
        return str(low)
    if low >= 2 and high >= 2:
        return "2"
    if high == 1:
        return "1"
    return ""


def _image_major(tag: str) -> str:
    """The TensorFlow major version of an image's tag: NVIDIA's ``20.06-tf1-py3``,
    TensorFlow's own ``1.15.5-gpu-py3`` (``latest``: 2.x)."""
    for major in ("1", "2"):
        if f"-tf{major}-" in f"{tag}-":
            return major
    if tag[:2] in ("1.", "2."):  # (NVIDIA's tags start with a year: 20.06)
        return tag[0]
    return "2" if tag.startswith(("latest", "nightly")) else ""


def pins_in(rel_path: str, text: str) -> list[Pin]:
    """The TensorFlow pins of one file (a requirement with a version; a Docker image)."""
    found: list[Pin] = []
    docker = DOCKER_FILES.search(rel_path) is not None
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        for match in _PIN.finditer(line):
            name, spec = match.group(1).lower(), match.group(2)
            major = "2" if name.startswith("tf-nightly") else _major(spec)
            if major:
                found.append(Pin(major, f"{rel_path}:{number} {match.group(0).strip()}"))
        if docker or "image" in line:
            for match in _IMAGE.finditer(line):
                major = _image_major(match.group(1))
                if major:
                    found.append(Pin(major, f"{rel_path}:{number} {match.group(0).strip()}"))
            found.extend(
                Pin("2", f"{rel_path}:{number} {m.group(0)}") for m in _MERLIN.finditer(line)
            )
    return found


def pinned_file(rel_path: str) -> bool:
    name = rel_path.rsplit("/", 1)[-1]
    return (
        name in PACKAGING_FILES
        or REQUIREMENT_FILES.search(rel_path) is not None
        or CONDA_FILES.search(rel_path) is not None
        or DOCKER_FILES.search(rel_path) is not None
    )


def folder_pins(files: Iterable[tuple[str, str]]) -> dict[str, Pin]:
    """Each folder's pin (from the input root; "" the root) from its files' pins; a folder
    whose files pin both major versions pins none."""
    by_folder: dict[str, list[Pin]] = {}
    for rel_path, text in files:
        folder = rel_path.rpartition("/")[0]
        by_folder.setdefault(folder, []).extend(pins_in(rel_path, text))
    return {
        folder: pins[0]
        for folder, pins in sorted(by_folder.items())
        if pins and len({p.major for p in pins}) == 1
    }


def pin_for(folder: str, pins: dict[str, Pin]) -> Pin | None:
    """The pin of the nearest folder at or above ``folder``."""
    while True:
        pin = pins.get(folder)
        if pin is not None or not folder:
            return pin
        folder = folder.rpartition("/")[0]


def launched(rel_path: str, text: str) -> list[tuple[str, int]]:
    """The Python files a shell launcher runs, as written (relative paths), with their lines;
    a module it runs (``-m pkg.mod``) as its path without the suffix (``pkg/mod``: the file
    ``pkg/mod.py`` or the package's ``pkg/mod/__main__.py``)."""
    runs: list[tuple[str, int]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        runs.extend((m.group(1), number) for m in _RUN.finditer(line))
        start = _LAUNCHER.search(line)
        if start is not None:
            modules = _MODULE_RUN.finditer(line, start.end())
            runs.extend((m.group(1).replace(".", "/"), number) for m in modules)
    return runs


def launched_files(script: str) -> tuple[str, ...]:
    """The files a launched script may be (``launched``'s): itself, or a ``-m`` module's file
    or package ``__main__``."""
    if script.endswith(".py"):
        return (script,)
    return (f"{script}.py", f"{script}/__main__.py")


def console_modules(rel_path: str, text: str) -> list[str]:
    """The modules a setup.py / setup.cfg / pyproject.toml names as console scripts or entry
    points (``name = pkg.cli:main``)."""
    name = rel_path.rsplit("/", 1)[-1]
    if name == "pyproject.toml":
        sections = re.findall(
            r"^\[(?:project\.scripts|tool\.poetry\.scripts|project\.gui-scripts)\]"
            r"([^\[]*)",
            text,
            re.M,
        )
    elif name == "setup.cfg":
        sections = re.findall(r"^\[options\.entry_points\]([^\[]*)", text, re.M)
    else:
        sections = re.findall(r"entry_points\s*=\s*([\[{][^\]}]*[\]}]|[^\n]*)", text)
    return [m for section in sections for m in _SCRIPT.findall(section)]


# a Python extension module a CMake target builds: pybind11 / nanobind / FindPython's, or a
# MODULE library (the others are linked, not imported)
_CMAKE_TARGET = re.compile(
    r"\b(pybind11_add_module|nanobind_add_module|python_add_library|python3_add_library|"
    r"add_library|cuda_add_library)\s*\(\s*([A-Za-z_][\w]*)([^)]*)\)",
    re.I,
)
_CMAKE_CUDA = re.compile(
    r"LANGUAGES[^)]*\bCUDA\b|enable_language\s*\(\s*CUDA|find_package\s*\(\s*CUDA", re.I
)


def cmake_extensions(rel_path: str, text: str) -> dict[str, str]:
    """The Python extension modules a CMakeLists.txt builds with CUDA: a target given a
    ``.cu`` source, or any target of a project that enables CUDA -> ``path:line``."""
    code = re.sub(r"#[^\n]*", "", text)  # (comments, kept line by line)
    cuda_project = _CMAKE_CUDA.search(code) is not None
    found: dict[str, str] = {}
    for match in _CMAKE_TARGET.finditer(code):
        command, name, rest = match.group(1).lower(), match.group(2), match.group(3)
        if command in ("add_library", "cuda_add_library") and not re.search(r"\bMODULE\b", rest):
            continue
        if cuda_project or ".cu" in rest:
            line = code.count("\n", 0, match.start()) + 1
            found.setdefault(name, f"{rel_path}:{line}")
    return found


@dataclass
class OtherFiles:
    """What the input's non-Python files say (read_other_files)."""

    pinned: list[tuple[str, str]] = field(default_factory=list)  # files that may pin TensorFlow
    launchers: dict[str, str] = field(default_factory=dict)  # shell launchers -> their text
    packaging: dict[str, str] = field(default_factory=dict)  # setup.py / .cfg / pyproject.toml
    extensions: dict[str, str] = field(default_factory=dict)  # CMake-built CUDA modules


def read_other_files(root: Path, paths: Iterable[str]) -> OtherFiles:
    """The files of the input (``paths`` from ``root``) that say something of its programs,
    each read once; a link, a file not regular or larger than MAX_BYTES says nothing."""
    found = OtherFiles()
    for rel_path in paths:
        name = rel_path.rsplit("/", 1)[-1]
        launcher = LAUNCHERS.search(name) is not None
        cmake = name in CMAKE_FILES
        if not (launcher or cmake or pinned_file(rel_path)):
            continue
        text = _text(root / rel_path)
        if text is None:
            continue
        if launcher:
            found.launchers[rel_path] = text
        elif cmake:
            for module, where in cmake_extensions(rel_path, text).items():
                found.extensions.setdefault(module, where)
        else:
            found.pinned.append((rel_path, text))
        if name in PACKAGING_FILES:
            found.packaging[rel_path] = text
    return found


def _text(path: Path) -> str | None:
    """A small regular file's text (None for anything else: it says nothing)."""
    data = read_small_regular(path, MAX_BYTES)
    return None if data is None else data.decode("utf-8", "replace")
