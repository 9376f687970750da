"""Rebuild ``rules/torch_npu_names/<X.Y.Z>.json`` from public torch-npu wheels.

Usage (every post release of a line: ``pip index versions torch-npu`` lists them)::

    for v in 2.1.0.post8 2.1.0.post10 2.1.0.post12 2.1.0.post13 2.1.0.post17; do
        pip download --no-deps --only-binary=:all: --python-version 3.11 \
            --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 "torch-npu==$v"
    done
    python scripts/build_npu_names.py torch_npu-2.1.0*.whl [more wheels...]

Each wheel is read statically (``zipfile`` + ``ast``); nothing from it is imported or run, so
the script works on any machine, without torch or an NPU.  One file is written per torch_npu
release line X.Y.Z, from all the wheels of it given (X.Y.Z and its ``.postN`` releases).  A
user who targets X.Y.Z may run any of them, so each name list holds the names EVERY one of
those wheels has (their intersection); ``later_posts`` maps, per list, each name that a post
release added and every later post release given kept to the first post release that has it.
A name that some post release has and a later one lacks is in neither (it is printed).
``wheel_versions`` lists the versions read, ``source`` the wheel files (with the start of their
sha256) and ``rebuild`` the commands that download them and rerun this script.

What each list holds (the rules are also written into every file's ``$comment``):

``npu_names``  the names ``torch.npu.<name>`` resolves to (``torch.npu`` IS the
    ``torch_npu.npu`` module): ``torch_npu/npu/__init__.py`` ``__all__``; the public names its
    module-level code binds (``def``, ``class``, assignments, and imports from inside
    ``torch_npu.npu``, ``*`` imports expanded through the imported module's ``__all__``);
    names its module ``__getattr__`` serves lazily; and the public submodules of
    ``torch_npu.npu`` that some import statement in the wheel's ``torch_npu`` sources imports
    (importing a submodule binds it on its package).  Imports of other modules (``os``,
    ``torch``, ``torch_npu.utils...``) are implementation details and are left out unless
    ``__all__`` names them.
``npu_amp_names``  the same rules for ``torch_npu.npu.amp``.
``optim_names``  the same rules for ``torch_npu.optim`` (the fused optimizers).
``npu_functions``  torch_npu's own top-level operator functions: the ``torch_npu.<op> =
    torch.ops.npu.<op>`` bindings of the generated ``torch_npu/utils/custom_ops.py`` (one per
    custom op of op-plugin, imported when torch_npu loads), plus the ATB operators that
    ``torch_npu/op_plugin/atb/_atb_ops.py`` sets on ``torch_npu`` in a
    ``for name in <literal list>: setattr(torch_npu, name, ...)`` loop.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import sys
import warnings
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "rules" / "torch_npu_names"

NPU = "torch_npu.npu"
AMP = "torch_npu.npu.amp"
OPTIM = "torch_npu.optim"
NAME_KEYS = ("npu_names", "npu_amp_names", "optim_names", "npu_functions")
CUSTOM_OPS = "torch_npu/utils/custom_ops.py"
ATB_OPS = "torch_npu/op_plugin/atb/_atb_ops.py"
# Other spellings of a package that assignments elsewhere in the wheel may use.
ALIASES = {NPU: ("torch_npu.npu", "torch.npu"), AMP: ("torch_npu.npu.amp", "torch.npu.amp")}

# A file whose text matches none of this can neither import a submodule of torch_npu.npu /
# torch_npu.optim nor assign onto them (a cheap filter: parsing every file is slow).
MAY_BIND = re.compile(rb"torch_npu\.(?:npu|optim)|torch\.npu|\bfrom\s+\.")
TRY_NODES = (ast.Try, getattr(ast, "TryStar", ast.Try))  # try/except* is Python 3.11+
VERSION_RE = re.compile(r"^(\d+\.\d+\.\d+)(?:\.post(\d+))?(?:\+[\w.]+)?$")

COMMENT = (
    "Names a torch_npu release line X.Y.Z provides, read statically (never imported) from its "
    "public wheels (every post release listed in wheel_versions) by scripts/build_npu_names.py; "
    "rerun that script (see rebuild) instead of editing. Each name list holds only the names "
    "EVERY one of those wheels has (a user targeting X.Y.Z may run any post release); "
    "later_posts.<list>.<name> is the first post release that has a name which it and every "
    "later post release have; names some post release has and a later one lacks are in "
    "neither. "
    "npu_names: what torch.npu.<name> resolves to (torch.npu IS the torch_npu.npu module: "
    "torch_npu renames the privateuse1 backend to 'npu' and registers the module) = "
    "torch_npu/npu/__init__.py __all__, the public names its module-level code binds (def, "
    "class, assignments, imports from inside torch_npu.npu with * imports expanded through "
    "the imported module's __all__), names its module __getattr__ serves lazily, and the "
    "public submodules some import statement in the wheel imports; imports of other modules "
    "(os, torch, torch_npu.utils...) are left out unless __all__ names them. npu_amp_names: "
    "the same for torch_npu.npu.amp; optim_names: the same for torch_npu.optim. "
    "npu_functions: torch_npu.<op> operator functions = the torch_npu.<op> = "
    "torch.ops.npu.<op> bindings of the generated torch_npu/utils/custom_ops.py (every op-plugin "
    "custom op, exposed or not in torch_npu.__all__) plus the ATB operators "
    "torch_npu/op_plugin/atb/_atb_ops.py sets on torch_npu; ops registered only in C++ and "
    "never bound there, and torch_npu's non-operator attributes (submodules such as "
    "torch_npu.npu or torch_npu.contrib, erase_stream, dtype symbols), are not in it."
)


def is_public(name: str) -> bool:
    return not name.startswith("_")


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def literal_strings(node: ast.AST | None) -> list[str] | None:
    """The strings of a literal list/tuple/set of strings, else None."""
    if not isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return None
    out: list[str] = []
    for elt in node.elts:
        if not (isinstance(elt, ast.Constant) and isinstance(elt.value, str)):
            return None
        out.append(elt.value)
    return out


def module_statements(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements run at module level: the body, and the blocks of module-level if/try/with
    (every branch: which one runs is unknown statically)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from module_statements(stmt.body)
            yield from module_statements(stmt.orelse)
        elif isinstance(stmt, TRY_NODES):
            yield from module_statements(stmt.body)
            for handler in stmt.handlers:
                yield from module_statements(handler.body)
            yield from module_statements(stmt.orelse)
            yield from module_statements(stmt.finalbody)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from module_statements(stmt.body)


def target_names(target: ast.AST) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from target_names(elt)
    elif isinstance(target, ast.Starred):
        yield from target_names(target.value)


def assignment_onto_module(node: ast.AST) -> tuple[str, str] | None:
    """(owner, name) for ``owner.name = ...`` and ``setattr(owner, "name", ...)`` with a
    dotted owner, else None."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Attribute):
                owner = dotted(target.value)
                if owner is not None:
                    return owner, target.attr
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "setattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        owner = dotted(node.args[0])
        if owner is not None:
            return owner, node.args[1].value
    return None


def module_literals(tree: ast.Module) -> dict[str, list[str]]:
    """Module-level ``NAME = [literal strings]`` and ``NAME = {"key": ...}`` (its keys)."""
    found: dict[str, list[str]] = {}
    for stmt in module_statements(tree.body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        if isinstance(value, ast.Dict):
            keys = literal_strings(ast.List(elts=[k for k in value.keys if k is not None]))
        else:
            keys = literal_strings(value)
        if keys is not None:
            found[target.id] = keys
    return found


def all_list(tree: ast.Module, where: str) -> list[str] | None:
    """The module's ``__all__`` (``=``, ``+=``, ``.extend``, ``.append`` of literals), None when
    it has none; ValueError when it is not literal (the script must then learn the new form)."""
    names: list[str] | None = None
    for stmt in module_statements(tree.body):
        value: ast.AST | None = None
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                continue
            value = stmt.value
            items = literal_strings(value)
            if items is None:
                raise ValueError(f"{where}: __all__ is not a literal list (line {stmt.lineno})")
            names = (names or []) + items if isinstance(stmt, ast.AugAssign) else items
        elif (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and dotted(stmt.value.func) in ("__all__.extend", "__all__.append")
        ):
            call = stmt.value
            if dotted(call.func) == "__all__.append":
                arg = call.args[0] if call.args else None
                items = [arg.value] if isinstance(arg, ast.Constant) else None
            else:
                items = literal_strings(call.args[0]) if call.args else None
            if items is None:
                raise ValueError(f"{where}: __all__ grows by a non-literal (line {stmt.lineno})")
            names = (names or []) + [str(i) for i in items]
    return names


def lazy_names(func: ast.FunctionDef | ast.AsyncFunctionDef, tree: ast.Module) -> set[str]:
    """Names a module ``__getattr__(name)`` answers: ``name == "x"``, ``name in ("x", ...)``,
    ``name in TABLE`` / ``TABLE[name]`` with TABLE a module-level literal list or dict."""
    if not func.args.args:
        return set()
    param = func.args.args[0].arg
    tables = module_literals(tree)
    found: set[str] = set()

    def table(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Name) and node.id in tables:
            return tables[node.id]
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        return literal_strings(node) or []

    for node in ast.walk(func):
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = node.left, node.comparators[0]
            if isinstance(node.ops[0], (ast.Eq, ast.In)):
                if isinstance(left, ast.Name) and left.id == param:
                    found.update(table(right))
                elif isinstance(right, ast.Name) and right.id == param:
                    found.update(table(left))
        elif isinstance(node, ast.Subscript):
            index = node.slice
            if isinstance(index, ast.Name) and index.id == param:
                found.update(table(node.value))
    return found


@dataclass
class Wheel:
    path: Path
    archive: zipfile.ZipFile
    version: str  # the full version, 2.1.0.post17
    release: str  # X.Y.Z
    post: int  # -1 without .postN
    torch_required: str
    sha256: str
    notes: list[str] = field(default_factory=list)
    _trees: dict[str, ast.Module | None] = field(default_factory=dict)
    _scan: tuple[set[tuple[str, str]], dict[str, set[str]]] | None = None
    _parsed: dict[str, ast.Module] = field(default_factory=dict)

    @classmethod
    def open(cls, path: Path) -> Wheel:
        archive = zipfile.ZipFile(path)
        metadata = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        if len(metadata) != 1:
            raise ValueError(f"{path.name}: expected one .dist-info/METADATA, found {metadata}")
        fields: dict[str, list[str]] = {}
        for line in archive.read(metadata[0]).decode("utf-8").splitlines():
            if not line.strip():
                break  # the headers end at the first empty line
            key, sep, value = line.partition(":")
            if sep and not key.startswith((" ", "\t")):
                fields.setdefault(key.strip(), []).append(value.strip())
        name = re.sub(r"[-_.]+", "-", fields.get("Name", [""])[0]).lower()
        if name != "torch-npu":
            raise ValueError(f"{path.name}: not a torch-npu wheel (Name: {name})")
        version = fields["Version"][0]
        match = VERSION_RE.match(version)
        if match is None:
            raise ValueError(f"{path.name}: version {version!r} is not X.Y.Z[.postN]")
        torch_required = ""
        for requirement in fields.get("Requires-Dist", []):
            spec = requirement.split(";")[0]
            if re.match(r"^torch(?![\w.-])", spec.strip()):
                torch_required = re.sub(r"[\s()]", "", spec)
        return cls(
            path=path,
            archive=archive,
            version=version,
            release=match.group(1),
            post=int(match.group(2)) if match.group(2) else -1,
            torch_required=torch_required,
            sha256=file_sha256(path),
        )

    # -- files and modules ------------------------------------------------------------------
    def files(self) -> list[str]:
        return self.archive.namelist()

    def has(self, path: str) -> bool:
        try:
            self.archive.getinfo(path)
        except KeyError:
            return False
        return True

    def module_path(self, module: str) -> str | None:
        base = module.replace(".", "/")
        for candidate in (f"{base}/__init__.py", f"{base}.py"):
            if self.has(candidate):
                return candidate
        return None

    def tree(self, module: str) -> ast.Module | None:
        if module not in self._trees:
            path = self.module_path(module)
            self._trees[module] = None if path is None else self.parse(path)
        return self._trees[module]

    def parse(self, path: str) -> ast.Module:
        if path not in self._parsed:
            text = self.archive.read(path).decode("utf-8-sig")  # some files start with a BOM
            with warnings.catch_warnings():  # invalid escapes in the wheel's strings
                warnings.simplefilter("ignore", SyntaxWarning)
                self._parsed[path] = ast.parse(text, filename=path)
        return self._parsed[path]

    def children(self, package: str) -> set[str]:
        """Public direct submodules of a package (``.py`` files and subpackages)."""
        prefix = package.replace(".", "/") + "/"
        found: set[str] = set()
        for name in self.files():
            if not name.startswith(prefix):
                continue
            rest = name[len(prefix) :].split("/")
            if len(rest) == 1 and rest[0].endswith(".py") and rest[0] != "__init__.py":
                found.add(rest[0][:-3])
            elif len(rest) == 2 and rest[1] == "__init__.py":
                found.add(rest[0])
        return {c for c in found if is_public(c) and c.isidentifier()}

    def python_modules(self) -> Iterator[tuple[str, str, bool]]:
        """(file, module name, is package) for every ``torch_npu/**.py``."""
        for name in sorted(self.files()):
            if name.startswith("torch_npu/") and name.endswith(".py"):
                parts = name[:-3].split("/")
                is_package = parts[-1] == "__init__"
                if is_package:
                    parts = parts[:-1]
                yield name, ".".join(parts), is_package

    # -- imports ------------------------------------------------------------------------------
    @staticmethod
    def resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
        if not node.level:
            return node.module or ""
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))

    def imports(self, node: ast.AST, module: str, is_package: bool) -> list[str]:
        """The modules one node imports: ``import a.b``, ``from P import x`` (P and P.x: x may
        be a submodule), ``importlib.import_module("literal")``."""
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        if isinstance(node, ast.ImportFrom):
            source = self.resolve(node, module, is_package)
            return [source] + [f"{source}.{a.name}" for a in node.names if a.name != "*"]
        if (
            isinstance(node, ast.Call)
            and dotted(node.func) in ("importlib.import_module", "import_module")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            return [node.args[0].value]
        return []

    def scan(self) -> tuple[set[tuple[str, str]], dict[str, set[str]]]:
        """One pass over the wheel's torch_npu sources: (importing module, imported module) for
        every import statement (at any depth) and literal ``importlib.import_module("...")``
        (for ``from P import x`` both P and P.x: x may be a submodule), and the public names
        assigned onto another module (``torch_npu.npu.x = ...``, ``setattr(torch.npu, "x",
        ...)``) by its dotted spelling."""
        if self._scan is None:
            imported: set[tuple[str, str]] = set()
            assigned: dict[str, set[str]] = {}
            for path, module, is_package in self.python_modules():
                if not MAY_BIND.search(self.archive.read(path)):
                    continue  # names none of the packages and has no relative import
                try:
                    tree = self.parse(path)
                except SyntaxError as exc:  # newer syntax than this Python: say so
                    self.notes.append(f"{path}: not parsed ({exc.msg}), its imports unseen")
                    continue
                for node in ast.walk(tree):
                    imported.update((module, m) for m in self.imports(node, module, is_package))
                    onto = assignment_onto_module(node)
                    if onto is not None and is_public(onto[1]):
                        assigned.setdefault(onto[0], set()).add(onto[1])
            self._scan = (imported, assigned)
        return self._scan

    # -- namespaces ---------------------------------------------------------------------------
    def star_names(self, module: str, root: str) -> set[str]:
        tree = self.tree(module)
        if tree is None:
            self.notes.append(f"from {module} import *: no Python source in the wheel")
            return set()
        exported = all_list(tree, module)
        if exported is not None:
            return set(exported)
        self.notes.append(f"from {module} import *: no __all__, took its public bound names")
        is_package = (self.module_path(module) or "").endswith("__init__.py")
        return {n for n in self.bound_names(module, tree, root, is_package) if is_public(n)}

    def bound_names(self, module: str, tree: ast.Module, root: str, is_package: bool) -> set[str]:
        """Names the module-level code binds, counting imports only from inside ``root``."""
        names: set[str] = set()
        for stmt in module_statements(tree.body):
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    source = alias.name if alias.asname else bound
                    if inside(source, root):
                        names.add(bound)
            elif isinstance(stmt, ast.ImportFrom):
                source = self.resolve(stmt, module, is_package)
                if not inside(source, root):
                    continue
                for alias in stmt.names:
                    if alias.name == "*":
                        names |= self.star_names(source, root)
                    else:
                        names.add(alias.asname or alias.name)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(stmt.name)
                if stmt.name == "__getattr__" and not isinstance(stmt, ast.ClassDef):
                    names |= lazy_names(stmt, tree)
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    names.update(target_names(target))
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                names.update(target_names(stmt.target))
            elif isinstance(stmt, ast.Delete):
                for target in stmt.targets:
                    names.difference_update(target_names(target))
        return names

    def namespace(self, package: str) -> list[str]:
        tree = self.tree(package)
        if tree is None:
            raise ValueError(f"{self.path.name}: no {package} package")
        names = set(all_list(tree, package) or [])
        names |= self.bound_names(package, tree, package, is_package=True)
        imported, assigned = self.scan()
        for child in sorted(self.children(package)):
            full = f"{package}.{child}"
            # imported by a module outside it (a package importing its own parts does not count)
            if any(inside(m, full) and not inside(by, full) for by, m in imported):
                names.add(child)
            elif child not in names:
                self.notes.append(f"{full}: public submodule no import statement imports")
        for spelling in ALIASES.get(package, (package,)):
            names |= assigned.get(spelling, set())
        return sorted(n for n in names if is_public(n) and not n.startswith("__"))

    # -- torch_npu.<op> ---------------------------------------------------------------------
    def npu_functions(self) -> list[str] | None:
        if not self.has(CUSTOM_OPS):
            self.notes.append(f"no {CUSTOM_OPS}: npu_functions left out")
            return None
        names: set[str] = set()
        for stmt in module_statements(self.parse(CUSTOM_OPS).body):
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Attribute) and dotted(target.value) == "torch_npu":
                        names.add(target.attr)
        if not names:
            raise ValueError(f"{self.path.name}: {CUSTOM_OPS} binds no torch_npu.<op>")
        if self.has(ATB_OPS):
            names |= self.atb_functions()
        return sorted(names)

    def atb_functions(self) -> set[str]:
        """Names ``for n in LIST (or chain(LIST, ...)): setattr(torch_npu, n, ...)`` sets."""
        tree = self.parse(ATB_OPS)
        tables = module_literals(tree)
        found: set[str] = set()
        for loop in ast.walk(tree):
            if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name)):
                continue
            variable = loop.target.id
            sets_torch_npu = any(
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "setattr"
                and len(node.args) >= 2
                and dotted(node.args[0]) == "torch_npu"
                and isinstance(node.args[1], ast.Name)
                and node.args[1].id == variable
                for node in ast.walk(loop)
            )
            if not sets_torch_npu:
                continue
            sources: Iterable[ast.AST] = [loop.iter]
            if isinstance(loop.iter, ast.Call) and dotted(loop.iter.func) in (
                "chain",
                "itertools.chain",
            ):
                sources = loop.iter.args
            for source in sources:
                if isinstance(source, ast.Name) and source.id in tables:
                    found.update(tables[source.id])
                else:
                    raise ValueError(f"{ATB_OPS}: setattr(torch_npu, ...) over a non-literal")
        return found

    # -- the names ----------------------------------------------------------------------------
    def names(self) -> dict[str, list[str] | None]:
        """Every name list of the wheel (``npu_functions`` None when it has no source for it)."""
        return {
            "npu_names": self.namespace(NPU),
            "npu_amp_names": self.namespace(AMP),
            "optim_names": self.namespace(OPTIM),
            "npu_functions": self.npu_functions(),
        }


@dataclass(frozen=True)
class WheelNames:
    """What one wheel provides: plain data, so that worker processes can return it."""

    file: str
    version: str
    release: str
    post: int
    torch_required: str
    sha256: str
    names: dict[str, list[str] | None]
    notes: tuple[str, ...]


def read_wheel(path: Path) -> WheelNames:
    wheel = Wheel.open(path)
    try:
        names = wheel.names()
    finally:
        wheel.archive.close()
    return WheelNames(
        file=path.name,
        version=wheel.version,
        release=wheel.release,
        post=wheel.post,
        torch_required=wheel.torch_required,
        sha256=wheel.sha256,
        names=names,
        notes=tuple(dict.fromkeys(wheel.notes)),
    )


def read_wheels(paths: Sequence[Path], jobs: int) -> list[WheelNames]:
    """The wheels read, in the order given (in ``jobs`` processes: reading one takes seconds)."""
    if jobs <= 1 or len(paths) <= 1:
        return [read_wheel(path) for path in paths]
    with ProcessPoolExecutor(max_workers=min(jobs, len(paths))) as pool:
        return list(pool.map(read_wheel, paths))


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def render(table: dict[str, object]) -> str:
    return json.dumps(table, indent=1, ensure_ascii=False) + "\n"


def release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


def release_lines(wheels: Iterable[WheelNames]) -> dict[str, list[WheelNames]]:
    """release X.Y.Z -> its wheels, oldest post release first; releases oldest first.
    ValueError for two different wheels of one version."""
    lines: dict[str, dict[int, WheelNames]] = {}
    for wheel in wheels:
        line = lines.setdefault(wheel.release, {})
        kept = line.get(wheel.post)
        if kept is not None and kept.sha256 != wheel.sha256:
            raise ValueError(
                f"two different wheels of torch-npu {wheel.version}: {kept.file} and {wheel.file}"
            )
        line[wheel.post] = wheel
    return {
        release: [lines[release][post] for post in sorted(lines[release])]
        for release in sorted(lines, key=release_key)
    }


@dataclass
class LineTable:
    table: dict[str, object]
    lists: dict[str, list[str]]  # key -> the names every post release has
    newest: dict[str, int]  # key -> how many names the newest post release has
    unstable: dict[str, dict[str, list[str]]]  # key -> name -> the post releases that have it
    notes: list[str]


def rebuild_command(line: Sequence[WheelNames]) -> str:
    versions = " ".join(w.version for w in line)
    download = (
        "pip download --no-deps --only-binary=:all: --python-version 3.11 "
        "--platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64"
    )
    if len(line) == 1:
        fetch = f"{download} torch-npu=={versions}"
    else:  # pip takes one version of a project per command
        fetch = f'for v in {versions}; do {download} "torch-npu==$v"; done'
    return f"{fetch} && python scripts/build_npu_names.py {' '.join(w.file for w in line)}"


def line_table(line: Sequence[WheelNames]) -> LineTable:
    """The table of one release line from all its wheels given (oldest post release first):
    the names every one of them has, and in ``later_posts`` the names that a post release
    added and every later one kept, with that first post release.  Names that some post
    release has but a later one lacks are in neither (``unstable``)."""
    newest = line[-1]
    requirements = list(dict.fromkeys(w.torch_required for w in line))
    notes: list[str] = []
    if len(requirements) > 1:
        notes.append(f"the post releases require different torch: {requirements}")
    table: dict[str, object] = {
        "$comment": COMMENT,
        "source": [f"{w.file} sha256 {w.sha256[:16]}" for w in line],
        "torch_npu_version": newest.release,
        "wheel_versions": [w.version for w in line],
        "torch_version_required": " | ".join(requirements),
        "rebuild": rebuild_command(line),
    }
    later_posts: dict[str, dict[str, str]] = {}
    lists: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    unstable: dict[str, dict[str, list[str]]] = {}
    for key in NAME_KEYS:
        per_wheel = [w.names[key] for w in line]
        if any(names is None for names in per_wheel):
            lacking = [w.version for w, names in zip(line, per_wheel) if names is None]
            notes.append(f"{key} left out: no static source for it in {', '.join(lacking)}")
            continue
        sets = [set(names or ()) for names in per_wheel]
        common = set.intersection(*sets)
        table[key] = lists[key] = sorted(common)
        counts[key] = len(sets[-1])
        later: dict[str, str] = {}
        for name in sorted(set.union(*sets) - common):
            has = [name in names for names in sets]
            first = has.index(True)
            if all(has[first:]):
                later[name] = line[first].version
            else:
                versions = [w.version for w, present in zip(line, has) if present]
                unstable.setdefault(key, {})[name] = versions
        later_posts[key] = later
    table["later_posts"] = later_posts
    return LineTable(table=table, lists=lists, newest=counts, unstable=unstable, notes=notes)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheels", nargs="+", type=Path, metavar="WHEEL")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="default: %(default)s")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when a file would change"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="wheels read at once (default: the CPU count, %(default)s)",
    )
    args = parser.parse_args(argv)
    stale = 0
    wheels = read_wheels(list(dict.fromkeys(args.wheels)), args.jobs)
    for release, line in release_lines(wheels).items():
        built = line_table(line)
        text = render(built.table)
        target = args.out / f"{release}.json"
        same = target.is_file() and target.read_text(encoding="utf-8") == text
        counts = ", ".join(
            f"{key} {len(names)}"
            + (f" (newest post {built.newest[key]})" if built.newest[key] != len(names) else "")
            for key, names in built.lists.items()
        )
        posts = ", ".join(w.version for w in line)
        if args.check:
            stale += not same
            print(f"{target}: {'up to date' if same else 'STALE'} [{posts}] ({counts})")
        else:
            args.out.mkdir(parents=True, exist_ok=True)
            if not same:
                target.write_text(text, encoding="utf-8")
            print(f"{target}: {'unchanged' if same else 'written'} [{posts}] ({counts})")
        for key, names in built.unstable.items():
            for name, versions in names.items():
                print(f"  {key} {name}: only in {', '.join(versions)} (left out)")
        sys.stdout.flush()
        for note in built.notes:
            print(f"  note ({release}): {note}", file=sys.stderr)
        for wheel in line:
            for note in wheel.notes:
                print(f"  note ({wheel.version}): {note}", file=sys.stderr)
        sys.stderr.flush()
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
