"""``--analyse --library``: the input read as a library, as ``--deps`` reads an installed one
(run/library_analysis.py: the engine's rules in analysis mode, the call graph, what reaches;
cached per package the same way, so either option reuses the other's result). Its packages: the
input folder itself when it has an ``__init__.py`` (named by the folder), else each top-level
package (``<name>/__init__.py``) and module (``<name>.py``) of the folder, and of its ``src/``
for a source tree (scan/site_packages.py's folders), but not its tests nor ``setup.py`` /
``conftest.py``. The run keeps every API that reaches (``RunResult.library``): the reports choose
the public ones (report/library_api.py)."""

from __future__ import annotations

import os
from pathlib import Path

from ms_fmk_transplt.engine.library_facts import LibraryFacts
from ms_fmk_transplt.errors import UserError
from ms_fmk_transplt.run.library_analysis import apis_reaching, package_reach
from ms_fmk_transplt.scan.cache import Cache
from ms_fmk_transplt.scan.deps_folders import deps_folders
from ms_fmk_transplt.scan.discover import Project
from ms_fmk_transplt.scan.site_packages import InstalledPackage, find_packages
from ms_fmk_transplt.tables import Tables

_NOT_LIBRARY = frozenset({"setup", "conftest", "test", "tests", "testing"})


def analyse_library(
    project: Project, tables: Tables, cache: Cache | None, jobs: int
) -> tuple[tuple[LibraryFacts, ...], list[str]]:
    """The input's packages with every API of each that reaches CUDA-specific code, and the
    log lines saying what was analysed."""
    packages = library_packages(project)
    if not packages:
        return (), ["--library: the input holds no Python package or module"]
    found: list[LibraryFacts] = []
    log: list[str] = []
    for package in packages:
        reach, aliases, how = package_reach(package, tables, cache, jobs)
        facts = LibraryFacts(package.name, package.dist, package.version, reach, aliases)
        found.append(facts)
        log.append(f"--library: {facts.label()}: {apis_reaching(len(reach))} CUDA ({how})")
    return tuple(found), log


def library_packages(project: Project) -> list[InstalledPackage]:
    """The packages and modules the input is made of, sorted by name."""
    if project.single_file is not None:
        name = project.single_file.stem
        return [InstalledPackage(name, project.single_file, "", "")] if _wanted(name) else []
    root = project.root
    if (root / "__init__.py").is_file():  # the package itself (its dist-info beside it)
        if not root.name.isidentifier():
            raise UserError(root, "--library: a package's folder name must be a Python name")
        found = find_packages([root.parent], [root.name])
        return [found.get(root.name, InstalledPackage(root.name, root, "", ""))]
    try:
        folders = deps_folders([str(root)], os.environ)
    except UserError:  # a folder of no package: nothing to list
        return []
    names = sorted({name for folder in folders for name in _top_names(folder)})
    return sorted(find_packages(folders, names).values(), key=lambda p: p.name)


def _top_names(folder: Path) -> list[str]:
    """The packages (``<name>/__init__.py``) and modules (``<name>.py``) in ``folder``."""
    names = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.endswith(".py") and entry.is_file(follow_symlinks=False):
                    names.append(entry.name[:-3])
                elif entry.is_dir(follow_symlinks=False) and os.path.isfile(
                    os.path.join(entry.path, "__init__.py")
                ):
                    names.append(entry.name)
    except OSError:
        return []
    return [n for n in names if _wanted(n)]


def _wanted(name: str) -> bool:
    """A name a library's user imports: not its tests, its setup.py or conftest.py."""
    if not name.isidentifier() or name in _NOT_LIBRARY:
        return False
    return not (name.startswith("test_") or name.endswith("_test"))
