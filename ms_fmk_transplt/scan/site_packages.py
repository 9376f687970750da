"""The installed packages ``--deps`` analyses, in the folders deps_folders.py gives: the folder,
distribution and version of each top-level name the project imports (``find_packages``) and
their Python files (``package_files``, ``content_digest``).

Nothing found is imported or executed: the folders and the distribution metadata are read as
files."""

from __future__ import annotations

import csv
import io
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ms_fmk_transplt.safety.regular_files import read_small_regular
from ms_fmk_transplt.scan.cache import files_digest

MAX_BYTES = 2 * 2**20  # as scan/project_scan.MAX_BYTES: larger files are generated, not modules
_META_BYTES = 4 * 2**20  # METADATA / PKG-INFO (headers, then a long description), top_level.txt
_RECORD_BYTES = 16 * 2**20  # a RECORD lists every file of the distribution
INFO_SUFFIXES = (".dist-info", ".egg-info")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+!-]{0,199}")


@dataclass(frozen=True)
class InstalledPackage:
    name: str  # the top-level import name ("transformers", "six" for six.py)
    root: Path  # the package folder, or the single module file
    dist: str  # the distribution name from its *.dist-info / *.egg-info; "" when none
    version: str  # "Version:" of its METADATA / PKG-INFO; "" when none


# ---------------------------------------------------------------------------- the packages


def find_packages(folders: Sequence[Path], names: Iterable[str]) -> dict[str, InstalledPackage]:
    """For each top-level import name in ``names``, where Python would find it on a path made
    of ``folders``: the first folder holding ``<name>/__init__.py`` or ``<name>.py`` (a package
    before a module in the same folder), else the first holding a namespace folder ``<name>/``
    with a ``.py`` file below it; a name found nowhere (or not an identifier) is absent.

    Its distribution and version come from the ``*.dist-info`` (its top_level.txt, else the
    first parts of its RECORD's paths) or ``*.egg-info`` (its top_level.txt) in the same folder
    that lists the name: the one whose own name is the import name's, else the one and only one
    listing it (a name several list, a namespace package such as ``google`` or stale
    dist-infos, gets ""). An unreadable or garbled METADATA / PKG-INFO, RECORD or top_level.txt
    gives "" (never an exception).

    Links: only regular files and folders are used. A ``<name>`` that is a symbolic link is
    followed only when its target resolves inside the same folder (the folder of ``folders``
    holding it), and ``root`` is then the resolved target; a link out of the folder (an
    editable install pointing elsewhere), a dangling link or a link loop is not found there.
    Nothing found is executed or imported."""
    listings = [_Folder(folder) for folder in folders]
    out: dict[str, InstalledPackage] = {}
    for name in dict.fromkeys(names):
        if not name.isidentifier():
            continue
        hit = _locate(listings, name)
        if hit is not None:
            folder, root = hit
            dist, version = folder.distribution(name)
            out[name] = InstalledPackage(name, root, dist, version)
    return out


def _locate(listings: list[_Folder], name: str) -> tuple[_Folder, Path] | None:
    namespace: tuple[_Folder, Path] | None = None
    for folder in listings:
        package = folder.target(name)
        if package is not None and _regular_file(package / "__init__.py"):
            return folder, package
        module = folder.target(name + ".py")
        if module is not None and _regular_file(module):
            return folder, module
        if namespace is None and package is not None and _has_python(package):
            namespace = folder, package
    return namespace


def _regular_file(path: Path) -> bool:
    """A regular file, not a link to one."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _has_python(folder: Path) -> bool:
    """A ``.py`` file somewhere below ``folder`` (not through a link)."""
    return next(_python_files(folder), None) is not None


@dataclass
class _Folder:
    """One folder of the path: its entries listed once, its distributions indexed lazily."""

    path: Path
    _entries: dict[str, os.DirEntry[str]] | None = None
    _real: str = ""
    _infos: dict[str, list[str]] | None = None  # normalised distribution name -> info folders
    _tops: dict[str, frozenset[str]] = field(default_factory=dict)  # info folder -> its names
    _owners: dict[str, list[str]] | None = None  # import name -> info folders listing it

    def entries(self) -> dict[str, os.DirEntry[str]]:
        if self._entries is None:
            self._entries = {}
            try:
                with os.scandir(self.path) as listing:
                    self._entries = {entry.name: entry for entry in listing}
            except OSError:
                pass
        return self._entries

    def target(self, name: str) -> Path | None:
        """The entry ``name`` (exactly so spelt), or what a link named so resolves to when that
        is inside this folder; None otherwise."""
        entry = self.entries().get(name)
        if entry is None:
            return None
        if not entry.is_symlink():
            return Path(entry.path)
        if not self._real:
            self._real = os.path.realpath(self.path)
        try:
            real = os.path.realpath(entry.path)
            os.stat(real)  # a dangling link, or a loop realpath left unresolved
            inside = os.path.commonpath([self._real, real]) == self._real != real
        except (OSError, ValueError):  # (ValueError: another drive)
            return None
        return Path(real) if inside else None

    def distribution(self, name: str) -> tuple[str, str]:
        """(distribution, version) of the import name ``name``; ("", "") when none owns it."""
        infos = self._info_index()
        named = [i for i in infos.get(_normalised(name), ()) if name in self._top_level(i)]
        if named:  # (two: stale dist-infos of one distribution, neither sure)
            return _metadata(self.path / named[0]) if len(named) == 1 else ("", "")
        if self._owners is None:
            self._owners = {}
            for info in sorted(i for group in infos.values() for i in group):
                for top in self._top_level(info):
                    self._owners.setdefault(top, []).append(info)
        owners = self._owners.get(name, [])
        return _metadata(self.path / owners[0]) if len(owners) == 1 else ("", "")

    def _info_index(self) -> dict[str, list[str]]:
        if self._infos is None:
            self._infos = {}
            for entry_name, entry in sorted(self.entries().items()):
                if entry_name.endswith(INFO_SUFFIXES) and _is_real_dir(entry):
                    dist = entry_name.rsplit(".", 1)[0].split("-", 1)[0]
                    self._infos.setdefault(_normalised(dist), []).append(entry_name)
        return self._infos

    def _top_level(self, info: str) -> frozenset[str]:
        if info not in self._tops:
            self._tops[info] = _listed_names(self.path / info)
        return self._tops[info]


def _is_real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _listed_names(info: Path) -> frozenset[str]:
    """The top-level names a dist-info / egg-info lists: its top_level.txt, else (a dist-info)
    the first parts of its RECORD's paths."""
    text = _text(info / "top_level.txt", _META_BYTES)
    if text is not None:
        return frozenset(n for n in (line.strip() for line in text.splitlines()) if n)
    if not info.name.endswith(".dist-info"):
        return frozenset()
    text = _text(info / "RECORD", _RECORD_BYTES)
    if text is None:
        return frozenset()
    if '"' in text:  # a path CSV had to quote (a comma in it): read as CSV
        try:
            paths = [row[0] for row in csv.reader(io.StringIO(text)) if row]
        except csv.Error:
            return frozenset()
    else:
        paths = [line.partition(",")[0] for line in text.splitlines()]
    firsts = {path.replace("\\", "/").partition("/")[:2] for path in paths}
    names = {_record_top(first, bool(slash)) for first, slash in firsts}
    names.difference_update(("", "__pycache__"))
    return frozenset(names)


def _record_top(first: str, folder: bool) -> str:
    """The import name the first part of a RECORD path installs (the folder ``pkg`` of
    ``pkg/x.py``; ``six.py`` -> ``six``, ``_ext.cpython-311-x86_64-linux-gnu.so`` -> ``_ext``);
    "" for the metadata, scripts and data."""
    if not folder:
        first = first.split(".", 1)[0] if first.endswith((".py", ".so", ".pyd")) else ""
    return first if first.isidentifier() else ""


def _metadata(info: Path) -> tuple[str, str]:
    """The "Name:" and "Version:" of METADATA (dist-info) / PKG-INFO (egg-info); "" each when
    missing or not plausible, both when the file is unreadable or not UTF-8."""
    metadata = "METADATA" if info.name.endswith(".dist-info") else "PKG-INFO"
    text = _text(info / metadata, _META_BYTES)
    if text is None:
        return "", ""
    name = version = ""
    for line in text.splitlines():
        if not line.strip():
            break  # the headers end at the first blank line
        key, colon, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if colon and key == "name" and not name:
            name = value if _NAME.fullmatch(value) else ""
        elif colon and key == "version" and not version:
            version = value if _VERSION.fullmatch(value) else ""
    return name, version


def _text(path: Path, limit: int) -> str | None:
    data = read_small_regular(path, limit)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


# ---------------------------------------------------------------------------- the files


def package_files(package: InstalledPackage, max_files: int = 20000) -> list[tuple[str, bytes]]:
    """The package's ``.py`` files as (path from the folder holding the package, posix, spelt
    with the import name: ``transformers/trainer.py``; ``six.py``, contents), sorted by path:
    regular files only (no link), at most MAX_BYTES each (larger ones are skipped), not in
    ``__pycache__`` nor in a folder whose name is no identifier (``tests-data``: nothing imports
    it), at most ``max_files`` of them (the first read in a sorted walk)."""
    root = package.root
    if _regular_file(root):
        data = read_small_regular(root, MAX_BYTES)
        return [] if data is None else [(f"{package.name}.py", data)]
    out: list[tuple[str, bytes]] = []
    for rel in _python_files(root):
        if len(out) >= max_files:
            break
        data = read_small_regular(root.joinpath(*rel.split("/")), MAX_BYTES)
        if data is not None:
            out.append((f"{package.name}/{rel}", data))
    out.sort(key=lambda item: item[0])
    return out


def _python_files(root: Path) -> Iterator[str]:
    """The posix paths (from ``root``) of the ``.py`` regular files below ``root``, walked in
    sorted order without recursion and without entering links, ``__pycache__`` or a folder
    whose name is no identifier (lazily: stop asking when enough)."""
    pending = [""]
    while pending:
        rel = pending.pop()
        try:
            with os.scandir(os.path.join(root, rel) if rel else root) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:
            continue
        folders = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name.isidentifier() and entry.name != "__pycache__":
                        folders.append(f"{rel}/{entry.name}" if rel else entry.name)
                elif entry.name.endswith(".py") and entry.is_file(follow_symlinks=False):
                    yield f"{rel}/{entry.name}" if rel else entry.name
            except OSError:
                continue
        pending.extend(reversed(folders))  # popped in sorted order


def content_digest(files: Sequence[tuple[str, bytes]]) -> str:
    """The sha256 (hex) of the files' paths and contents, each length-prefixed
    (cache.files_digest, as the project's facts are keyed)."""
    return files_digest(files).hex()
