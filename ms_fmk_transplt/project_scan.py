"""Before migrating: read the input's Python files once for what one file tells the others
(engine/rules/cuda_only/project_facts.py: the CUDA-only code each module defines)."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterable, Iterator

from ms_fmk_transplt.cache import Cache
from ms_fmk_transplt.discover import Project
from ms_fmk_transplt.engine.rules.cuda_only.cuda_only_code import cuda_only_names
from ms_fmk_transplt.engine.rules.cuda_only.cuda_only_hints import has_condition, hinted
from ms_fmk_transplt.engine.rules.cuda_only.project_facts import ProjectFacts, module_name
from ms_fmk_transplt.regular_files import read_regular
from ms_fmk_transplt.tables import Tables
from ms_fmk_transplt.tables.unsupported_table import UnsupportedTable, registered_op_namespaces

MAX_BYTES = 2 * 2**20  # larger files are generated code, not modules others import kernels from


def _sources(project: Project, paths: list[str]) -> Iterator[tuple[str, bytes]]:
    """The Python files to read; ``paths`` receives the path of every file of the input."""
    for rel_path in project.files():
        paths.append(rel_path.as_posix())
        src = project.root / rel_path
        if src.suffix != ".py" or src.is_symlink() or not src.is_file():
            continue
        try:
            if src.stat().st_size > MAX_BYTES:
                continue
            yield rel_path.as_posix(), read_regular(src)
        except OSError:
            continue  # reported when the file itself is migrated


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
    for rel_path, source in files:
        namespaces.update(registered_op_namespaces(source))
        module = module_name(rel_path)
        if module.rsplit(".", 1)[-1].encode(
            "utf-8", "surrogateescape"
        ) not in imported or not hinted(source, table):
            continue
        names = _cuda_only_names(rel_path, source, table, cache)
        if names:
            cuda_only[module] = dict(names)
    return ProjectFacts(cuda_only, frozenset(namespaces))


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
    files = list(_sources(project, paths))
    single = project.single_file is not None
    own = own_modules(paths, "" if single else project.root.name)
    facts = _scanned(files, tables, cache)
    return dataclasses.replace(facts, own_modules=own) if own else facts


def _scanned(files: list[tuple[str, bytes]], tables: Tables, cache: Cache | None) -> ProjectFacts:
    """The facts read from the files' contents: from the cache's entry for the whole project
    when there is one."""
    if cache is None:
        return build_facts(files, tables.unsupported)
    digest = hashlib.sha256()
    for rel_path, source in files:
        encoded = rel_path.encode("utf-8", "surrogateescape")
        digest.update(b"%d|%s|%d|" % (len(encoded), encoded, len(source)))
        digest.update(source)
    key = cache.key("project facts (all files)", digest.digest())
    entry = cache.get(key)
    found = _facts(entry.value) if entry is not None else None
    if found is not None:
        return found
    facts = build_facts(files, tables.unsupported, cache)
    cache.put(key, {"cuda_only": facts.cuda_only, "op_namespaces": sorted(facts.op_namespaces)})
    return facts


def _facts(value: object) -> ProjectFacts | None:
    """A cached value of scan_project, or None for anything else (the project is scanned)."""
    if type(value) is not dict or set(value) != {"cuda_only", "op_namespaces"}:
        return None
    modules, namespaces = value["cuda_only"], value["op_namespaces"]
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
    return ProjectFacts(cuda_only, frozenset(namespaces))


def facts_fingerprint(facts: ProjectFacts | None) -> str:
    """The facts as text, for the fingerprint of a run (cached results depend on them: a
    library's rows go where its name is one of the project's own modules)."""
    text = _read_facts_text(facts)
    if facts is None or not facts.own_modules:
        return text
    return f"{text}|own modules {sorted(facts.own_modules)!r}"


def _read_facts_text(facts: ProjectFacts | None) -> str:
    """The facts read from the files' contents, as text."""
    if facts is None:
        return ""
    modules = sorted((m, sorted(n.items())) for m, n in facts.cuda_only.items())
    return repr((modules, sorted(facts.op_namespaces)))
