"""The programs of the input, computed once per run before migrating (engine/program_facts.py
says what they are; the rule families ask for them through ``EngineOptions.project``).

1. The import graph: each module's imports of the project's own modules, resolved the way
   Python finds them for a script (the importing file's folder first, then each folder above
   it, up to the input root; relative imports from the package).
2. Entry points: a module with a ``__main__`` guard, a script a shell launcher runs, a module a
   setup.py / setup.cfg / pyproject.toml names as a console script (project_files.py), a
   TensorFlow module no other module imports that runs code at module level.
3. Programs: an entry point and the project files it imports, at any depth. A program that
   imports TensorFlow gets its major version from the evidence that decides it, in order: the
   pin nearest above its entry (requirements, packaging, conda, Dockerfile images), then the
   names its modules use (engine/rules/tf/tf_versions.py: a TF 1.x-only name makes it 1.x, a
   TF 2.x-only one 2.x, graph code through ``tf.compat.v1`` alone 1.x), else 2.x.
4. Each TensorFlow file's style, from the programs that import it; a file imported by programs
   of both versions is reported and keeps the style of its own code.

Only the import lines are read for the graph (no parse); a module is parsed only when it
imports TensorFlow (its evidence, cached by content)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from ms_fmk_transplt.engine.program_facts import MODULE_LEVEL, Program, ProgramFacts
from ms_fmk_transplt.engine.rules.family_exports import Evidence, receiving_parameter
from ms_fmk_transplt.scan.cache import Cache
from ms_fmk_transplt.scan.project_files import (
    OtherFiles,
    Pin,
    console_modules,
    folder_pins,
    launched,
    launched_files,
    pin_for,
)
from ms_fmk_transplt.scan.pytorch_files import imports_torch, not_pytorch, torch_imports
from ms_fmk_transplt.scan.tf_module_scan import TfModule, scan_module
from ms_fmk_transplt.scan.training_programs import module_level_entries, training_entries
from ms_fmk_transplt.tables.table_sections import ImportsTable
from ms_fmk_transplt.tables.tf_migration_table import TfMigrationTable

# (a model built without the run's tables: torch alone makes a file PyTorch code)
NO_LIBRARIES = ImportsTable("", frozenset({"torch"}))

_MAIN_GUARD = re.compile(
    rb"""^if\s+(?:__name__\s*==\s*['"]__main__['"]|['"]__main__['"]\s*==\s*__name__)\s*:""", re.M
)
_IMPORT = re.compile(rb"[ \t]*import[ \t]+([^\n#;]+)")
_FROM = re.compile(rb"[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]+)")
_NAME = re.compile(r"[A-Za-z_][\w]*")

Import = tuple[int, str, list[str]]  # level, module, the names imported from it


def _imports(source: bytes, top_level: bool = False) -> list[Import]:
    """(level, module, names imported from it) of each import line (``import a.b`` is
    ``(0, "a.b", [])``); ``top_level``: of the unindented ones only (not under an ``if``, a
    ``try``, in a function)."""
    return [found for indented, found in _import_lines(source) if not (top_level and indented)]


def _import_lines(source: bytes) -> list[tuple[bool, Import]]:
    """What _imports reads of each import line, and whether the line is indented. Only the
    lines holding the word ``import`` are read (a regular expression anchored at every line
    start would read every line)."""
    found: list[tuple[bool, Import]] = []
    lines: set[int] = set()
    at = source.find(b"import")
    while at >= 0:
        start = source.rfind(b"\n", 0, at) + 1
        if start not in lines:
            lines.add(start)
            head = source[start:at].strip(b" \t")
            read: list[Import] = []
            if not head:
                _plain_import(_IMPORT.match(source, start), read)
            elif head.startswith(b"from"):
                _from_import(_FROM.match(source, start), read)
            indented = source[start : start + 1] in (b" ", b"\t")
            found.extend((indented, line) for line in read)
        at = source.find(b"import", at + 6)
    return found


def _plain_import(match: re.Match[bytes] | None, found: list[Import]) -> None:
    if match is None:
        return
    for part in match.group(1).decode("utf-8", "replace").split(","):
        words = part.split()
        if words and all(_NAME.fullmatch(w) for w in words[0].split(".")):
            found.append((0, words[0], []))


def _from_import(match: re.Match[bytes] | None, found: list[Import]) -> None:
    if match is None:
        return
    level, module = len(match.group(1)), match.group(2).decode("utf-8", "replace")
    names = [
        n.split()[0]
        for n in match.group(3).decode("utf-8", "replace").strip("() \t\r\n\\").split(",")
        if n.split()
    ]
    found.append((level, module, [n for n in names if _NAME.fullmatch(n)]))


class _Modules:
    """The project's modules by path: resolves an import in a file to the files it names."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = set(paths)
        # every name a path is made of: an absolute import of any other name (os, torch) is
        # no module of the project
        self.names = {part.rpartition(".")[0] or part for p in self.paths for part in p.split("/")}
        self._resolved: dict[tuple[str, int, str, tuple[str, ...]], list[str]] = {}

    def file(self, base: str, dotted: str) -> str | None:
        stem = "/".join(p for p in (base, dotted.replace(".", "/")) if p)
        for candidate in (f"{stem}.py", f"{stem}/__init__.py"):
            if candidate in self.paths:
                return candidate
        return None

    def resolve(self, importer: str, level: int, module: str, names: list[str]) -> list[str]:
        if not level and module.partition(".")[0] not in self.names:
            return []
        key = (importer.rpartition("/")[0], level, module, tuple(names))
        found = self._resolved.get(key)
        if found is None:
            found = self._resolved[key] = self._resolve(key[0], level, module, names)
        return found

    def _resolve(self, folder: str, level: int, module: str, names: list[str]) -> list[str]:
        if level:
            for _ in range(level - 1):
                folder = folder.rpartition("/")[0]
            bases = [folder]
        else:
            bases = [folder]
            while folder:
                folder = folder.rpartition("/")[0]
                bases.append(folder)
            # a package of a src layout (src/pkg), imported by the project's tests and scripts
            bases += [f"{base}/src" if base else "src" for base in bases]
        for base in bases:
            found = self.file(base, module) if module else None
            subs = [self.file(base, f"{module}.{n}" if module else n) for n in names]
            hits = [f for f in (found, *subs) if f is not None]
            if hits:
                return hits
        return []


def _graph(imports: dict[str, list[Import]], index: _Modules) -> dict[str, list[str]]:
    graph: dict[str, list[str]] = {}
    for path, lines in imports.items():
        targets: list[str] = []
        for level, module, names in lines:
            targets.extend(index.resolve(path, level, module, names))
        graph[path] = sorted(set(targets) - {path})
    return graph


class _TopImports:
    """The unindented import lines of each module by its path (of what _import_lines read
    once per module)."""

    def __init__(self, lines: dict[str, list[tuple[bool, Import]]]) -> None:
        self.lines = lines
        self.read: dict[str, list[Import]] = {}

    def __call__(self, path: str) -> list[Import]:
        found = self.read.get(path)
        if found is None:
            found = [line for indented, line in self.lines[path] if not indented]
            self.read[path] = found
        return found


def _closure(entry: str, graph: dict[str, list[str]]) -> tuple[str, ...]:
    seen = {entry}
    order = [entry]
    for path in order:  # (order grows as the walk goes)
        for target in graph.get(path, ()):
            if target not in seen:
                seen.add(target)
                order.append(target)
    return tuple(order)


def _entries(
    modules: dict[str, bytes],
    launchers: dict[str, str],
    packaging: dict[str, str],
    index: _Modules,
) -> dict[str, str]:
    """Entry file -> how it was found."""
    entries: dict[str, str] = {}
    for rel_path, text in sorted(launchers.items()):
        folder = rel_path.rpartition("/")[0]
        for script, line in launched(rel_path, text):
            script = script[2:] if script.startswith("./") else script
            files = launched_files(script)
            for candidate in (f"{b}/{f}" if b else f for b in (folder, "") for f in files):
                if candidate in modules:
                    entries.setdefault(candidate, f"launcher {rel_path}:{line}")
                    break
    for rel_path, text in sorted(packaging.items()):
        folder = rel_path.rpartition("/")[0]
        for module in console_modules(rel_path, text):
            for base in (folder, f"{folder}/src" if folder else "src"):
                found = index.file(base, module)
                if found is not None:
                    entries.setdefault(found, f"console script {rel_path}")
                    break
    for path, source in modules.items():
        if path not in entries and b"__main__" in source and _MAIN_GUARD.search(source):
            entries[path] = "__main__ guard"
    return entries


def _optional_torch(
    modules: dict[str, bytes],
    imports: dict[str, list[Import]],
    top_imports: _TopImports,
    tf_files: set[str],
    libraries: ImportsTable,
) -> set[str]:
    """The files whose torch imports (as _imports reads them) make them no PyTorch code
    (pytorch_files.not_pytorch): none of them unindented, and the file a TensorFlow file
    (an optional backend, under an ``if`` or a ``try``) or none of them a real import (a
    docstring's example: _imports reads lines, not code)."""
    found: set[str] = set()
    for path, lines in imports.items():
        if not torch_imports(lines, libraries):
            continue
        if torch_imports(top_imports(path), libraries):
            continue
        if path in tf_files or not imports_torch(modules[path], libraries):
            found.add(path)
    return found


def _roots(imports: list[Import]) -> set[str]:
    """The top-level names of every module the file imports (absolute imports)."""
    return {module.split(".")[0] for level, module, _ in imports if not level and module}


def _is_tf(imports: list[Import], table: TfMigrationTable) -> bool:
    """The file imports TensorFlow (a root of the table's) or one of Horovod's TensorFlow
    front ends (``import horovod.tensorflow.keras``, ``from horovod import tensorflow``: the
    table's horovod_modules, as tf_files.tf_file reads them)."""
    for level, module, names in imports:
        if level or not module:
            continue
        if module.split(".")[0] in table.import_roots:
            return True
        paths = (module, *(f"{module}.{n}" for n in names))
        if any(p in table.horovod_modules for p in paths):
            return True
    return False


def _horovod_flow(
    scanned: dict[str, TfModule], index: _Modules
) -> tuple[dict[str, dict[str, str]], dict[str, tuple[str, ...]]]:
    """Horovod passed as a value, one call level: the parameters of the project's functions
    it lands in (file -> parameter -> Horovod's kind), and the calls of each file that pass
    it (horovod_values.py)."""
    params: dict[str, dict[str, str]] = {}
    passed: dict[str, list[str]] = {}
    for path, module in sorted(scanned.items()):
        for callee, position, keyword, kind, line in module.passes:
            target_module, _, function = callee.rpartition(".")
            shown = "kept as a value" if callee == "?=" else function.lstrip("?")
            passed.setdefault(path, []).append(f"{shown} at line {line}")
            if callee.startswith("?"):
                continue  # (a method, a call of a call: no function the model resolves)
            target: str | None = path
            if target_module:
                dotted = target_module.lstrip(".")
                level = len(target_module) - len(dotted)
                found = index.resolve(path, level, dotted, [])
                target = found[0] if found else None
            callee_module = scanned.get(target) if target is not None else None
            if target is None or callee_module is None:
                continue
            parameters = callee_module.functions.get(function)
            name = receiving_parameter(parameters, position, keyword) if parameters else ""
            if name:
                params.setdefault(target, {})[name] = kind
    return params, {path: tuple(calls) for path, calls in passed.items()}


def _first(kind: str, files: Iterable[str], evidence: dict[str, Evidence]) -> str:
    """``name (path:line)`` of the first file holding that kind of evidence; "" for none."""
    for path in files:
        found = evidence.get(path, {}).get(kind)
        if found is not None:
            return f"{found[0]} ({path}:{found[1]})"
    return ""


def decide_version(
    folder: str, files: Iterable[str], pins: dict[str, Pin], evidence: dict[str, Evidence]
) -> tuple[str, str]:
    """(major version, what decided it) of TensorFlow code in ``folder`` made of ``files``."""
    pin = pin_for(folder, pins)
    if pin is not None:
        return pin.major, f"pin {pin.where}"
    files = [f for f in files if f in evidence]
    tf1, tf2 = _first("tf1_only", files, evidence), _first("tf2_only", files, evidence)
    if tf1 and tf2:
        return "", f"conflicting: TF 1.x-only {tf1}, TF 2.x-only {tf2}"
    if tf1:
        return "1", f"TF 1.x-only name {tf1}"
    if tf2:
        return "2", f"TF 2.x-only name {tf2}"
    graph = _first("graph_mode", files, evidence)
    if graph:
        return "1", f"graph code {graph} through tf.compat.v1, no pin, no TF 2.x-only name"
    return "2", "no pin, no TF 1.x-only name"


def _style(version: str, path: str, evidence: dict[str, Evidence]) -> str:
    if version == "1":
        return "tf1"
    return "tf2_compat" if "graph_mode" in evidence.get(path, {}) else "tf2"


def build_programs(
    modules: dict[str, bytes],
    pins: dict[str, Pin],
    launchers: dict[str, str],
    packaging: dict[str, str],
    table: TfMigrationTable,
    cache: Cache | None = None,
    libraries: ImportsTable = NO_LIBRARIES,
) -> ProgramFacts:
    """The programs of the input from its Python modules (path -> bytes), the pins of its
    folders, its shell launchers and packaging files (path -> text); ``libraries``: the
    modules that make a file PyTorch code, and the standard library's (pytorch_files.py)."""
    lines = {path: _import_lines(source) for path, source in modules.items()}
    imports = {path: [line for _, line in read] for path, read in lines.items()}
    roots = {path: _roots(lines) for path, lines in imports.items()}
    tf_files = {path for path, lines in imports.items() if _is_tf(lines, table)}
    scanned = {p: scan_module(p, modules[p], table, cache) for p in sorted(tf_files)}
    evidence = {p: m.evidence for p, m in scanned.items()}
    index = _Modules(modules)  # (one for the graph, the entries and the Horovod flow)
    top_imports = _TopImports(lines)
    graph = _graph(imports, index)
    entries = _entries(modules, launchers, packaging, index)
    imported = {target for targets in graph.values() for target in targets}
    for path in sorted(tf_files - imported - set(entries)):
        if "script" in evidence[path]:
            entries[path] = f"{MODULE_LEVEL} (line {evidence[path]['script'][1]})"
    entries.update(module_level_entries(modules, imported, {*entries, *tf_files}))
    torch_entries: list[str] = []  # (no TensorFlow program's: which of them train)
    programs: list[Program] = []
    versions: dict[str, dict[str, str]] = {}  # TF file -> {entry: version}
    reasons: dict[str, str] = {}
    tf2_entries: set[str] = set()
    for entry, found_by in sorted(entries.items()):
        files = _closure(entry, graph)
        tf = [f for f in files if f in tf_files]
        if not tf:
            torch = any("torch" in roots[f] for f in files)
            framework = "torch" if torch else ""
            programs.append(Program(entry, found_by, framework, "", "", len(files)))
            torch_entries.append(entry)
            continue
        version, decided_by = decide_version(entry.rpartition("/")[0], tf, pins, evidence)
        programs.append(Program(entry, found_by, "tensorflow", version, decided_by, len(files)))
        if not version:
            continue
        for path in tf:
            versions.setdefault(path, {})[entry] = version
            reasons.setdefault(path, f"program {entry}: {decided_by}")
        computes = any(m in modules[f] for f in tf for m in table.tf2_markers)
        if version == "2" and computes and any(_style("2", f, evidence) == "tf2" for f in tf):
            tf2_entries.add(entry)
    styles: dict[str, tuple[str, str]] = {}
    shared: dict[str, tuple[str, ...]] = {}
    for path in sorted(tf_files):
        by_entry = versions.get(path, {})
        if len(set(by_entry.values())) == 1:
            version, why = next(iter(by_entry.values())), reasons[path]
        else:
            if by_entry:
                shared[path] = tuple(sorted(by_entry))
            version, why = decide_version(path.rpartition("/")[0], [path], pins, evidence)
            why = f"its own code: {why}"
        styles[path] = (_style(version or "1", path, evidence), why)
    horovod, passed = _horovod_flow(scanned, index)
    compat = {  # (a module nobody imports, an entry by its module-level code, is a library)
        p.entry
        for p in programs
        if p.version == "2" and styles.get(p.entry, ("",))[0] == "tf2_compat"
        if not p.found_by.startswith(MODULE_LEVEL)
    }
    return ProgramFacts(
        tuple(programs),
        styles,
        frozenset(tf2_entries),
        shared,
        horovod,
        passed,
        frozenset(compat),
        not_pytorch(
            imports,
            graph,
            tf_files,
            libraries,
            _optional_torch(modules, imports, top_imports, tf_files, libraries),
        ),
        training_entries(torch_entries, modules, imports, top_imports, index.resolve),
        {path: tuple(targets) for path, targets in graph.items() if targets},
    )


def program_facts(
    files: list[tuple[str, bytes]],
    other: OtherFiles,
    table: TfMigrationTable,
    cache: Cache | None = None,
    notebooks: list[tuple[str, bytes]] | None = None,
    libraries: ImportsTable = NO_LIBRARIES,
) -> ProgramFacts:
    """The programs of the input from its Python modules' paths and bytes and what its other
    files say (project_files.read_other_files); ``notebooks``: the code of each notebook
    (notebook_code.py)."""
    pins = folder_pins(other.pinned)
    facts = build_programs(
        dict(files), pins, other.launchers, other.packaging, table, cache, libraries
    )
    found = notebook_styles(notebooks or [], pins, table, cache)
    if not found:
        return facts
    return dataclasses.replace(facts, tf_style={**facts.tf_style, **found})


def notebook_styles(
    notebooks: list[tuple[str, bytes]],
    pins: dict[str, Pin],
    table: TfMigrationTable,
    cache: Cache | None = None,
) -> dict[str, tuple[str, str]]:
    """Each TensorFlow notebook's (no torch) style and why, decided as a program's version is:
    the pin nearest above it, else the names its code uses. A notebook is a program of its
    own: it decides which support list its cells are read against (tf.unsupported_api);
    how its cells are rewritten follows its own code (run/notebook.py)."""
    styles: dict[str, tuple[str, str]] = {}
    for path, code in notebooks:
        imports = _imports(code)
        if not _is_tf(imports, table) or "torch" in _roots(imports):
            continue
        evidence = {path: scan_module(path, code, table, cache).evidence}
        version, why = decide_version(path.rpartition("/")[0], [path], pins, evidence)
        styles[path] = (_style(version or "1", path, evidence), f"notebook: {why}")
    return styles
