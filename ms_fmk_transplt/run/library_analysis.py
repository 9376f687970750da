"""``--deps``: before migrating, the installed third-party packages the project imports are
analysed (scan/site_packages.py finds them; never imported, never copied, never changed):
each module migrated in analysis mode by the engine's own rules for its CUDA-specific lines
(scan/library_seeds.py), read for its call graph (scan/library_graph.py), and what reaches those
lines propagated (scan/library_reach.py). A package's result is cached by its name, version
and the digest of its files: a second run reads it. The facts the run keeps are the APIs whose
names the project's files spell (engine/library_facts.py), asked for by the deps family."""

from __future__ import annotations

import gc
import os
import re
import sys
from collections.abc import Iterable, Iterator

from ms_fmk_transplt.engine.library_facts import DepsFacts, LibraryFacts, Reach
from ms_fmk_transplt.engine.migrate import migrate_source
from ms_fmk_transplt.engine.options import EngineOptions
from ms_fmk_transplt.engine.spans.shared_tree import analysable_tree
from ms_fmk_transplt.errors import UserError
from ms_fmk_transplt.run.worker_pool import WorkerPool, pool_context
from ms_fmk_transplt.safety.regular_files import read_small_regular
from ms_fmk_transplt.scan.cache import Cache
from ms_fmk_transplt.scan.deps_folders import deps_folders
from ms_fmk_transplt.scan.discover import Project
from ms_fmk_transplt.scan.library_graph import ModuleGraph, module_graph, place_seeds
from ms_fmk_transplt.scan.library_lines import line_facts
from ms_fmk_transplt.scan.library_reach import library_reach
from ms_fmk_transplt.scan.library_seeds import result_seeds
from ms_fmk_transplt.scan.notebook_code import notebook_code
from ms_fmk_transplt.scan.project_scan import MAX_BYTES
from ms_fmk_transplt.scan.site_packages import (
    InstalledPackage,
    content_digest,
    find_packages,
    package_files,
)
from ms_fmk_transplt.tables import Tables
from ms_fmk_transplt.tables.deps_table import load_deps_table

_IMPORTS = re.compile(
    rb"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import\b|import[ \t]+([\w., \t]+))", re.M
)
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_ANALYSIS = EngineOptions(input_lines=True)


def imported_names(files: Iterable[tuple[str, bytes]]) -> set[str]:
    """The top-level names the files import (absolute imports)."""
    found: set[str] = set()
    for _, source in files:
        for match in _IMPORTS.finditer(source):
            if match.group(1) is not None:
                found.add(match.group(1).split(b".")[0].decode("ascii", "replace"))
            else:
                for part in match.group(2).split(b","):
                    name = part.strip().split(b".")[0].split()[0:1]
                    if name:
                        found.add(name[0].decode("ascii", "replace"))
    return {n for n in found if n.isidentifier()}


def project_sources(project: Project) -> list[tuple[str, bytes]]:
    """The project's Python files and its notebooks' code (what they import, the names they
    spell)."""
    found = []
    for rel_path in project.files():
        if rel_path.suffix in (".py", ".ipynb"):
            source = read_small_regular(project.root / rel_path, MAX_BYTES)
            if source is not None and rel_path.suffix == ".ipynb":
                source = notebook_code(source)
            if source is not None:
                found.append((rel_path.as_posix(), source))
    return found


def analyse_dependencies(
    values: tuple[str, ...],
    files: list[tuple[str, bytes]],
    own_modules: frozenset[str],
    tables: Tables,
    cache: Cache | None,
    jobs: int,
) -> tuple[DepsFacts, list[str]]:
    """The facts of the packages the project imports found in the ``--deps`` folders, and the
    log lines saying what was analysed (raises UserError for a bad ``--deps`` value)."""
    table = load_deps_table()
    if any(not value.strip() for value in values):
        raise UserError("--deps", "an empty value: give a folder, or auto")
    folders = deps_folders(values, os.environ)
    wanted = imported_names(files) - own_modules - table.not_analysed
    packages = find_packages(folders, sorted(wanted))
    words = {w.decode("ascii", "replace") for _, s in files for w in _WORD.findall(s)}
    libraries: dict[str, LibraryFacts] = {}
    log: list[str] = []
    for name, package in sorted(packages.items()):
        reach, aliases, how = package_reach(package, tables, cache, jobs)
        kept = {k: v for k, v in reach.items() if _spelled(k, words)}
        kept_aliases = {k: v for k, v in aliases.items() if _spelled(k, words)}
        libraries[name] = LibraryFacts(name, package.dist, package.version, kept, kept_aliases)
        label = f"{name} {package.version}".strip()
        log.append(f"--deps: {label} ({package.root}): {apis_reaching(len(reach))} CUDA ({how})")
    stdlib: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())  # (3.10 and later)
    missing = sorted(wanted - packages.keys() - stdlib - set(sys.builtin_module_names))
    if missing and stdlib:
        log.append(f"--deps: not found in the folders given: {', '.join(missing)}")
    return DepsFacts(libraries), log


def _spelled(dotted: str, words: set[str]) -> bool:
    """Whether the project's files spell the API's own name: only such an API can be one of
    its calls."""
    return dotted.rpartition(".")[2] in words


def package_reach(
    package: InstalledPackage, tables: Tables, cache: Cache | None, jobs: int
) -> tuple[dict[str, Reach], dict[str, str], str]:
    files = package_files(package)
    key = ""
    if cache is not None:
        label = f"deps|{package.name}|{package.dist}|{package.version}"
        key = cache.key(label, content_digest(files).encode("ascii"))
        entry = cache.get(key)
        found = _cached(entry.value) if entry is not None else None
        if found is not None:
            return found[0], found[1], f"{_files(len(files))}, from the cache"
    read = list(_graphs(files, tables, jobs))
    graphs = [g for g in read if g is not None]
    reach, aliases = library_reach(graphs)
    if cache is not None:
        cache.put(
            key,
            {
                "reach": {
                    k: [r.kind, list(r.path), r.conditional] for k, r in sorted(reach.items())
                },
                "aliases": dict(sorted(aliases.items())),
            },
        )
    how = f"{_files(len(files))} analysed"
    if len(graphs) < len(read):  # (reported once: a cached result is of the same files)
        how = f"{how}; {_files(len(read) - len(graphs))} Python cannot read, left out"
    return reach, aliases, how


def _cached(value: object) -> tuple[dict[str, Reach], dict[str, str]] | None:
    """A cached package result, or None for anything else (the package is analysed again)."""
    if type(value) is not dict or set(value) != {"reach", "aliases"}:
        return None
    reach_value, aliases = value["reach"], value["aliases"]
    if type(reach_value) is not dict or type(aliases) is not dict:
        return None
    reach: dict[str, Reach] = {}
    for api, item in reach_value.items():
        if type(item) is not list or len(item) != 3 or item[0] not in ("cuda", "cpu"):
            return None
        if type(item[2]) is not bool:
            return None
        steps = item[1]
        if type(steps) is not list or not all(type(s) is str for s in steps):
            return None
        reach[api] = Reach(item[0], tuple(steps), item[2])
    if not all(type(k) is str and type(v) is str for k, v in aliases.items()):
        return None
    return reach, dict(aliases)


def _files(count: int) -> str:
    return f"{count} file{'s' * (count != 1)}"


def _graphs(
    files: list[tuple[str, bytes]], tables: Tables, jobs: int
) -> Iterator[ModuleGraph | None]:
    """Each module's graph (None: Python cannot read it), in the files' order."""
    if jobs <= 1 or len(files) < 32:
        for task in files:
            yield module_facts(tables, task)
        return
    context = pool_context()
    pool = WorkerPool(context, jobs, module_facts, _crashed, tables)
    try:
        yield from pool.results(files)
    finally:
        pool.close()


def _crashed(task: tuple[str, bytes]) -> ModuleGraph | None:
    return None  # a module that kills its worker is left out of the graph


def module_facts(tables: Tables, task: tuple[str, bytes]) -> ModuleGraph | None:
    """One module: its graph with the engine's seeds placed (None: Python cannot read it)."""
    rel_path, source = task
    collecting = gc.isenabled()
    gc.disable()
    try:
        tree = analysable_tree(source)
        if tree is None:
            return None
        lines = line_facts(tree)
        graph = module_graph(rel_path, tree, lines)
        result = migrate_source(source, rel_path, tables, _ANALYSIS)
        place_seeds(
            graph,
            lines,
            result_seeds(result, load_deps_table(), rel_path.split("/", 1)[0].removesuffix(".py")),
        )
        return graph
    finally:
        if collecting:
            gc.enable()


def apis_reaching(count: int) -> str:
    """``1 API reaches`` / ``3 APIs reach`` (the log's words)."""
    return f"{count} API reaches" if count == 1 else f"{count} APIs reach"
