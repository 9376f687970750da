"""Before migrating: read the input's Python files once for what one file tells the others
(engine/rules/cuda_only/project_facts.py: the CUDA-only code each module defines, the CUDA
extension modules the project builds)."""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterable, Iterator

from ms_fmk_transplt.engine.program_facts import ProgramFacts, from_cached, to_cached
from ms_fmk_transplt.engine.project_facts import ProjectFacts, ascend_kernel_source, module_name
from ms_fmk_transplt.engine.rules.family_exports import cuda_only_names, has_condition, hinted
from ms_fmk_transplt.engine.scope_model import full_name
from ms_fmk_transplt.engine.spans.shared_tree import analysable_tree
from ms_fmk_transplt.engine.tree_nodes import import_bindings
from ms_fmk_transplt.safety.regular_files import read_small_regular
from ms_fmk_transplt.scan.cache import Cache, files_digest
from ms_fmk_transplt.scan.discover import Project
from ms_fmk_transplt.scan.notebook_code import notebook_code
from ms_fmk_transplt.scan.program_model import program_facts
from ms_fmk_transplt.scan.project_files import OtherFiles, read_other_files
from ms_fmk_transplt.tables import Tables
from ms_fmk_transplt.tables.unsupported_table import UnsupportedTable, registered_op_namespaces

MAX_BYTES = 2 * 2**20  # larger files are generated code, not modules others import kernels from


def _sources(
    project: Project, paths: list[str], notebooks: list[tuple[str, bytes]]
) -> Iterator[tuple[str, bytes]]:
    """The Python files to read; ``paths`` receives the path of every file of the input,
    ``notebooks`` the code of each notebook (notebook_code.py)."""
    for rel_path in project.files():
        paths.append(rel_path.as_posix())
        if rel_path.suffix == ".ipynb":
            data = read_small_regular(project.root / rel_path, MAX_BYTES)
            code = notebook_code(data) if data is not None else None
            if code is not None:
                notebooks.append((rel_path.as_posix(), code))
        if rel_path.suffix != ".py":
            continue
        source = read_small_regular(project.root / rel_path, MAX_BYTES)
        if source is not None:  # (else reported when the file itself is migrated)
            yield rel_path.as_posix(), source


# a folder holding one of these is a root imports start from, and so is its src/
_PROJECT_FILES = frozenset({"setup.py", "setup.cfg", "pyproject.toml"})


def own_modules(paths: Iterable[str], package: str = "") -> frozenset[str]:
    """The top-level modules and packages the project holds, from the paths of its files (from
    the input root): each ``name.py`` and each folder with a Python file below it, at a root an
    import starts from: the input root, a folder holding a setup.py / setup.cfg /
    pyproject.toml, and the ``src/`` of either. ``package``: the input folder's name, when it is
    a package itself (an ``__init__.py`` at its root). A deeper folder (``tools/megatron/``) is
    none; a single-file input holds that file alone (the folder's other files are not the
    input's)."""
    python, roots = [], {""}
    for path in paths:
        folder, _, name = path.rpartition("/")
        if name in _PROJECT_FILES:
            roots.add(folder)
        if name.endswith(".py"):
            python.append(path[:-3].split("/"))
    roots.update([f"{root}/src" if root else "src" for root in roots])
    own = {package} if package and ["__init__"] in python else set()
    for parts in python:
        folder = ""
        for i, part in enumerate(parts):
            if folder in roots and part.isidentifier() and part != "__init__":
                own.add(part)
            folder = f"{folder}/{part}" if i else part
    return frozenset(own)


_IMPORT_LINE = re.compile(rb"^[ \t]*(?:from|import)[ \t][^\n]*", re.M)
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


CPP_EXTENSION = "torch.utils.cpp_extension"
EXTENSION_CLASSES = frozenset({f"{CPP_EXTENSION}.CUDAExtension", f"{CPP_EXTENSION}.CppExtension"})
JIT_BUILDS = frozenset({f"{CPP_EXTENSION}.load", f"{CPP_EXTENSION}.load_inline"})
BUILD_WORD = b"cpp_extension"  # each build API is imported from torch.utils.cpp_extension
# a call of one with a string literal first (the name: only a literal counts); a file without
# one is not parsed (torch.load("x.pt") matches too: the parse then says no)
_BUILD_CALL = re.compile(
    rb"(?:CUDAExtension|CppExtension|load|load_inline)\s*\(\s*(?:name\s*=\s*)?[rbuRBU]?['\"]"
)


def _imports_and_calls(tree: ast.Module) -> tuple[dict[str, str], list[ast.Call]]:
    """What the module's imports bind each name to (``ce`` -> ``torch.utils.cpp_extension``),
    and its calls: one walk of the tree."""
    nodes = list(ast.walk(tree))
    return import_bindings(nodes), [n for n in nodes if isinstance(n, ast.Call)]


def _argument(call: ast.Call, position: int | None, keyword: str) -> ast.expr | None:
    """The argument given as ``keyword`` or at ``position`` (None: keyword only)."""
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    args = call.args
    if position is None or position >= len(args):
        return None
    if any(isinstance(a, ast.Starred) for a in args[: position + 1]):
        return None
    return args[position]


def _strings(node: ast.expr | None) -> list[str]:
    """The string literals of a literal list/tuple (or one string) of file names."""
    if node is None:
        return []
    elements = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
    return [e.value for e in elements if isinstance(e, ast.Constant) and type(e.value) is str]


def _given(node: ast.expr | None) -> bool:
    """A keyword given a value other than a literal False / None / empty string or list."""
    if node is None:
        return False
    if isinstance(node, ast.Constant):
        return node.value not in (False, None, "")
    return not (isinstance(node, (ast.List, ast.Tuple)) and not node.elts)


def extension_builds(rel_path: str, source: bytes, table: UnsupportedTable) -> dict[str, str]:
    """The CUDA extension modules a file builds: importable dotted name -> ``path:line``.
    In a setup.py: ``CUDAExtension(name, ...)``, and ``CppExtension`` given a CUDA source
    (``.cu``); anywhere: ``cpp_extension.load(name, sources)`` with a CUDA source and
    ``load_inline(name, ..., cuda_sources=...)``. Calls are resolved through the imports; only
    a string literal name counts."""
    if BUILD_WORD not in source or not _BUILD_CALL.search(source):
        return {}
    in_setup = rel_path.rsplit("/", 1)[-1] == "setup.py"
    tree = analysable_tree(source)
    if tree is None:
        return {}  # reported when the file itself is migrated
    bound, calls = _imports_and_calls(tree)
    found: dict[str, str] = {}
    for node in calls:
        dotted = full_name(node.func)
        if not dotted:
            continue
        root, _, rest = dotted.partition(".")
        qualified = ".".join(p for p in (bound.get(root, ""), rest) if p)
        if qualified in EXTENSION_CLASSES and in_setup:
            sources = _strings(_argument(node, 1, "sources"))
            cuda = qualified.endswith(".CUDAExtension") or any(
                s.endswith(table.cuda_file_suffixes) for s in sources
            )
        elif qualified in JIT_BUILDS:
            cuda = _given(_argument(node, None, "with_cuda")) or (
                _given(_argument(node, 2, "cuda_sources"))
                if qualified.endswith("_inline")
                else any(
                    s.endswith(table.cuda_file_suffixes)
                    for s in _strings(_argument(node, 1, "sources"))
                )
            )
        else:
            continue
        name = _argument(node, 0, "name")
        if cuda and isinstance(name, ast.Constant) and type(name.value) is str and name.value:
            found.setdefault(name.value, f"{rel_path}:{node.lineno}")
    return found


def _own_extensions(extensions: dict[str, str], modules: set[str]) -> dict[str, str]:
    """The extensions no Python module of the project has the name of (its suffixes counted:
    ``src/pkg/_C.py`` is ``pkg._C``): an import of such a name may be the plain module."""
    suffixes: set[str] = set()
    for module in modules:
        parts = module.split(".")
        suffixes.update(".".join(parts[i:]) for i in range(len(parts)))
    return {name: where for name, where in sorted(extensions.items()) if name not in suffixes}


def ascend_kernel_folders(files: Iterable[tuple[str, bytes]]) -> frozenset[str]:
    """The folders (from the input root) holding a Triton kernel file written for the NPU:
    the project's own triton-ascend kernels live there (LLaMA-Factory's third_party/triton/,
    whose utils.py reads torch.npu.current_device() and the AI core count for every kernel
    of the folder), so its Triton files need no port."""
    return frozenset(
        rel_path.rpartition("/")[0] for rel_path, source in files if ascend_kernel_source(source)
    )


def build_facts(
    files: Iterable[tuple[str, bytes]], table: UnsupportedTable, cache: Cache | None = None
) -> ProjectFacts:
    """The facts of a project from its Python files (path from the input root, contents).
    Only modules some file with a condition the rule could keep imports are analysed (a cheap
    first look at the import lines of those files): parsing is paid where it can matter."""

    files = list(files)
    imported: set[bytes] = set()  # the words of the import lines of files with a condition
    for _, source in files:
        if has_condition(source):
            for line in _IMPORT_LINE.findall(source):
                imported.update(_WORD.findall(line))
    cuda_only: dict[str, dict[str, str]] = {}
    namespaces: set[str] = set()
    extensions: dict[str, str] = {}
    modules: set[str] = set()
    for rel_path, source in files:
        namespaces.update(registered_op_namespaces(source))
        module = module_name(rel_path)
        modules.add(module)
        for name, where in extension_builds(rel_path, source, table).items():
            extensions.setdefault(name, where)
        if module.rsplit(".", 1)[-1].encode(
            "utf-8", "surrogateescape"
        ) not in imported or not hinted(source, table):
            continue
        names = _cuda_only_names(rel_path, source, table, cache)
        if names:
            cuda_only[module] = dict(names)
    own = _own_extensions(extensions, modules)
    return ProjectFacts(cuda_only, frozenset(namespaces), own)


def _cuda_only_names(
    rel_path: str, source: bytes, table: UnsupportedTable, cache: Cache | None
) -> dict[str, str]:
    """A module's CUDA-only names, from the cache when its content was analysed before (a
    warm run would otherwise parse and analyse the same modules again)."""
    if cache is None:
        return dict(cuda_only_names(source, table))
    key = cache.key("project facts:" + rel_path, source)
    found = cache.get(key)
    cached = _names(found.value) if found is not None else None
    if cached is not None:
        return cached
    names = dict(cuda_only_names(source, table))
    cache.put(key, names)
    return names


def _names(value: object) -> dict[str, str] | None:
    """A cached value of _cuda_only_names (names to strings), or None for anything else."""
    if type(value) is not dict:
        return None
    names = {k: v for k, v in value.items() if type(k) is str and type(v) is str}
    return names if len(names) == len(value) else None


def scan_project(project: Project, tables: Tables, cache: Cache | None = None) -> ProjectFacts:
    """``tables``: the run's; ``cache``: where the facts of the whole project, and those of
    each analysed module, are kept between runs (a warm run reads the files and finds the
    project's entry by their contents: no scan; one changed file rescans the project, its
    unchanged modules from their own entries). The project's own top-level modules come from
    the paths of its files, on every run."""
    paths: list[str] = []
    notebooks: list[tuple[str, bytes]] = []
    files = list(_sources(project, paths, notebooks))
    single = project.single_file is not None
    own = own_modules(paths, "" if single else project.root.name)
    digest = _digest(files) if cache is not None else b""
    facts = _scanned(files, tables, cache, digest)
    other = read_other_files(project.root, paths)
    programs = _programs(files, other, tables, cache, digest, notebooks)
    extensions = facts.extensions
    if other.extensions:  # (the CUDA modules CMake builds: no Python module has their name)
        modules = {module_name(rel_path) for rel_path, _ in files}
        extensions = {**_own_extensions(other.extensions, modules), **extensions}
    return dataclasses.replace(
        facts,
        own_modules=own,
        programs=programs,
        extensions=dict(sorted(extensions.items())),
        ascend_kernels=ascend_kernel_folders(files),
    )


def _digest(files: list[tuple[str, bytes]]) -> bytes:
    """The digest of the Python files' paths and contents (the facts' and the model's cache
    entries are keyed by it)."""
    return files_digest(files)


def _programs(
    files: list[tuple[str, bytes]],
    other: OtherFiles,
    tables: Tables,
    cache: Cache | None,
    digest: bytes,
    notebooks: list[tuple[str, bytes]],
) -> ProgramFacts:
    """The program model (program_model.py), from the cache's entry for these files (the
    Python modules, the notebooks' code and what the other files say) when there is one: a
    warm run builds none."""
    if cache is None:
        return program_facts(
            files, other, tables.tf_migration, notebooks=notebooks, libraries=tables.imports
        )
    other_text = repr(dataclasses.astuple(other)).encode("utf-8", "surrogateescape")
    key = cache.key("program model", digest + other_text + _digest(notebooks))
    entry = cache.get(key)
    found = from_cached(entry.value) if entry is not None else None
    if found is not None:
        return found
    programs = program_facts(files, other, tables.tf_migration, cache, notebooks, tables.imports)
    cache.put(key, to_cached(programs))
    return programs


def _scanned(
    files: list[tuple[str, bytes]], tables: Tables, cache: Cache | None, digest: bytes
) -> ProjectFacts:
    """The facts read from the files' contents: from the cache's entry for the whole project
    when there is one."""
    if cache is None:
        return build_facts(files, tables.unsupported)
    key = cache.key("project facts (all files)", digest)
    entry = cache.get(key)
    found = _facts(entry.value) if entry is not None else None
    if found is not None:
        return found
    facts = build_facts(files, tables.unsupported, cache)
    cache.put(
        key,
        {
            "cuda_only": facts.cuda_only,
            "op_namespaces": sorted(facts.op_namespaces),
            "extensions": facts.extensions,
        },
    )
    return facts


def _facts(value: object) -> ProjectFacts | None:
    """A cached value of scan_project, or None for anything else (the project is scanned)."""
    if type(value) is not dict or set(value) != {"cuda_only", "op_namespaces", "extensions"}:
        return None
    modules, namespaces = value["cuda_only"], value["op_namespaces"]
    extensions = _names(value["extensions"])
    if extensions is None:
        return None
    if type(modules) is not dict or type(namespaces) is not list:
        return None
    cuda_only: dict[str, dict[str, str]] = {}
    for module, value_names in modules.items():
        names = _names(value_names)
        if type(module) is not str or names is None:
            return None
        cuda_only[module] = names
    if any(type(n) is not str for n in namespaces):
        return None
    return ProjectFacts(cuda_only, frozenset(namespaces), extensions)


def facts_fingerprint(facts: ProjectFacts | None) -> str:
    """The facts as text, for the fingerprint of a run (cached results depend on them: a
    library's rows go where its name is one of the project's own modules)."""
    text = _read_facts_text(facts)
    if facts is None:
        return text
    if facts.own_modules:
        text = f"{text}|own modules {sorted(facts.own_modules)!r}"
    if facts.ascend_kernels:
        text = f"{text}|ascend kernels {sorted(facts.ascend_kernels)!r}"
    if facts.deps is not None:
        text = f"{text}|deps {facts.deps.fingerprint()}"
    if facts.assessed is not None:
        text = f"{text}|assessed {facts.assessed.fingerprint()}"
    programs = facts.programs.fingerprint()  # (what TensorFlow each file is migrated for)
    return f"{text}|{programs}" if programs else text


def _read_facts_text(facts: ProjectFacts | None) -> str:
    """The facts read from the files' contents, as text."""
    if facts is None:
        return ""
    modules = sorted((m, sorted(n.items())) for m, n in facts.cuda_only.items())
    if facts.extensions:  # (a project without any keeps the fingerprint it had)
        return repr((modules, sorted(facts.op_namespaces), sorted(facts.extensions.items())))
    return repr((modules, sorted(facts.op_namespaces)))
