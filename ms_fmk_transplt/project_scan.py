"""Before migrating: read the input's Python files once for what one file tells the others
(engine/rules/cuda_only/project_facts.py: the CUDA-only code each module defines)."""

from __future__ import annotations

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


def _sources(project: Project) -> Iterator[tuple[str, bytes]]:
    for rel_path in project.files():
        src = project.root / rel_path
        if src.suffix != ".py" or src.is_symlink() or not src.is_file():
            continue
        try:
            if src.stat().st_size > MAX_BYTES:
                continue
            yield rel_path.as_posix(), read_regular(src)
        except OSError:
            continue  # reported when the file itself is migrated


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
    unchanged modules from their own entries)."""
    files = list(_sources(project))
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
    """The facts as text, for the fingerprint of a run (cached results depend on them)."""
    if facts is None:
        return ""
    modules = sorted((m, sorted(n.items())) for m, n in facts.cuda_only.items())
    return repr((modules, sorted(facts.op_namespaces)))
