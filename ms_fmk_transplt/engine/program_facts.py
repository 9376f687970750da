"""The programs of the input (computed once per run by program_model.py, asked for by the rule
families through ``EngineOptions.project.programs``): each entry point, the project files it
imports, its framework and that framework's major version with the evidence that decided it.

A TensorFlow file is migrated in the style of the programs it belongs to (``tf_style``): TF 1.x
(``tf1``: the adapter's ``npu_bridge``), TF 2.x eager code (``tf2``: ``npu_device``, opened at
the program's entry) or TF 2.x code in TF 1.x graph style through ``tf.compat.v1``
(``tf2_compat``: ``npu_device.compat.v1``). A file shared by programs of both versions is
reported (``shared``) and keeps the style of its own code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MODULE_LEVEL = "module-level code"  # how a TensorFlow module nobody imports is an entry


@dataclass(frozen=True)
class Program:
    """One program: its entry file (path from the input root) and what was found of it."""

    entry: str
    found_by: str  # "__main__ guard", "launcher run.sh:3", "console script setup.py"
    framework: str  # "tensorflow", "torch", "" (neither is imported)
    version: str  # the framework's major version ("1", "2"; "" when unknown or no TensorFlow)
    decided_by: str  # the evidence of the version ("pin requirements.txt:2 tensorflow==1.15")
    files: int  # how many of the project's files it is (the entry and what it imports)

    def as_json(self) -> dict[str, object]:
        return {
            "entry": self.entry,
            "found_by": self.found_by,
            "framework": self.framework,
            "version": self.version,
            "decided_by": self.decided_by,
            "files": self.files,
        }


@dataclass(frozen=True)
class FileProgram:
    """What the programs say of one file (ProgramFacts.for_file)."""

    style: str  # its TensorFlow style ("" when the programs give it none)
    entry: bool  # the entry of a TF 2.x program: the NPU device is opened there
    horovod: dict[str, str]  # parameters a caller passes Horovod in -> its kind ("tf1"/"keras")
    passes_horovod: tuple[str, ...]  # where the file passes Horovod on as a value
    compat_entry: bool = False  # the entry of a TF 2.x program running compat.v1 graph code
    # a TF 2.x compat.v1 module nobody imports, an entry by its module-level code only (a
    # library registering its classes): the compat mode is its importer's to turn on
    compat_library: bool = False
    program_entry: bool = False  # the entry of a TensorFlow program (either version)


@dataclass(frozen=True)
class ProgramFacts:
    programs: tuple[Program, ...] = ()
    # a TensorFlow file -> its style ("tf1", "tf2", "tf2_compat") and why
    tf_style: dict[str, tuple[str, str]] = field(default_factory=dict)
    # the entry files of TF 2.x programs: the NPU device is opened there (whatever they import)
    tf2_entries: frozenset[str] = frozenset()
    # a file imported by TensorFlow programs of both versions -> their entries
    shared: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # a file -> its functions' parameters some caller passes Horovod in -> Horovod's kind
    horovod_params: dict[str, dict[str, str]] = field(default_factory=dict)
    # a file -> the calls that pass Horovod on as a value ("create_optimizer at line 321")
    horovod_passed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # the entries of TF 2.x programs that run compat.v1 graph code themselves (tf2_compat):
    # npu_device.compat.enable_v1() goes there, not into the modules eager programs import
    compat_entries: frozenset[str] = frozenset()
    # Python files of no PyTorch program (program_model.py): neither TensorFlow nor linked to
    # PyTorch code by the project's imports; the PyTorch rules do not run on them
    not_pytorch: frozenset[str] = frozenset()
    # the entries of the programs that train (scan/training_programs.py): the entry or a
    # project module it imports calls ``.backward(`` or a trainer's ``.train(`` / ``.fit(``;
    # no TensorFlow program, no TPU script (the advice family's training_scripts.py)
    training: frozenset[str] = frozenset()
    # the import graph: a Python file -> the project's files its import lines name
    imports: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def imported_by(self, entry: str) -> tuple[str, ...]:
        """``entry`` and the project's files it imports, directly or through them (in the
        order the graph reaches them)."""
        order, seen = [entry], {entry}
        for path in order:  # (order grows as the walk goes)
            for target in self.imports.get(path, ()):
                if target not in seen:
                    seen.add(target)
                    order.append(target)
        return tuple(order)

    def pytorch(self, path: str) -> bool:
        """Whether the PyTorch rules run on the file: every file but those the model says
        belong to no PyTorch program (a file it never saw, a notebook, is judged as before)."""
        return path not in self.not_pytorch

    def for_file(self, path: str) -> FileProgram:
        return FileProgram(
            self.style(path),
            path in self.tf2_entries,
            self.horovod_params.get(path, {}),
            self.horovod_passed.get(path, ()),
            path in self.compat_entries,
            self.style(path) == "tf2_compat"
            and any(p.entry == path and p.found_by.startswith(MODULE_LEVEL) for p in self.programs),
            path in self.tf_entries(),
        )

    def tf_entries(self) -> frozenset[str]:
        """The entry files of the TensorFlow programs (either version)."""
        return frozenset(p.entry for p in self.programs if p.framework == "tensorflow")

    def fingerprint(self) -> str:
        """What of the model the migrated files depend on, as text ("" for a model that says
        nothing of TensorFlow)."""
        others = f" not pytorch {sorted(self.not_pytorch)!r}" if self.not_pytorch else ""
        if self.training:
            others += f" training {sorted(self.training)!r}"
        if not (self.tf_style or self.tf2_entries or self.horovod_params or self.horovod_passed):
            return others.lstrip()
        compat = sorted(self.compat_entries)
        styles = sorted((path, style) for path, (style, _) in self.tf_style.items())
        horovod = sorted((p, sorted(n.items())) for p, n in self.horovod_params.items())
        passed = sorted(self.horovod_passed.items())
        entries = sorted(self.tf2_entries)
        tf_entries = sorted(self.tf_entries())
        return (
            f"tf styles {styles!r} {entries!r} {horovod!r} {passed!r} {compat!r} {tf_entries!r}"
            f"{others}"
        )

    def notes(self) -> list[str]:
        """What the run's log and terminal say of the model: each file programs of both
        TensorFlow versions import (it is migrated by its own code, which may not suit both)."""
        return [
            f"{path}: imported by TF 1.x and TF 2.x programs ({', '.join(entries)}): migrated "
            f"as {self.style(path)} ({self.tf_style[path][1]}); check it suits both"
            for path, entries in sorted(self.shared.items())
        ]

    def style(self, path: str) -> str:
        """The TensorFlow style the programs give the file ("" when they give none)."""
        found = self.tf_style.get(path)
        return found[0] if found is not None else ""

    def as_json(self) -> dict[str, object]:
        return {
            "programs": [p.as_json() for p in self.programs],
            "shared_files": {path: list(entries) for path, entries in sorted(self.shared.items())},
        }


def to_cached(facts: ProgramFacts) -> dict[str, object]:
    """The facts as plain JSON values (the cache keeps them: a warm run builds no model)."""
    return {
        "programs": [
            [p.entry, p.found_by, p.framework, p.version, p.decided_by, p.files]
            for p in facts.programs
        ],
        "tf_style": {path: list(item) for path, item in facts.tf_style.items()},
        "tf2_entries": sorted(facts.tf2_entries),
        "shared": {path: list(entries) for path, entries in facts.shared.items()},
        "horovod_params": facts.horovod_params,
        "horovod_passed": {path: list(calls) for path, calls in facts.horovod_passed.items()},
        "compat_entries": sorted(facts.compat_entries),
        "not_pytorch": sorted(facts.not_pytorch),
        "training": sorted(facts.training),
        "imports": {path: list(targets) for path, targets in facts.imports.items()},
    }


def _strs(value: object) -> list[str] | None:
    if type(value) is not list or any(type(v) is not str for v in value):
        return None
    return list(value)


def _str_lists(value: object) -> dict[str, list[str]] | None:
    if type(value) is not dict:
        return None
    found = {k: _strs(v) for k, v in value.items()}
    if any(type(k) is not str or v is None for k, v in found.items()):
        return None
    return {k: v for k, v in found.items() if v is not None}


def from_cached(value: object) -> ProgramFacts | None:
    """to_cached's value read back; None for anything else (the model is built again)."""
    keys = {"programs", "tf_style", "tf2_entries", "shared", "horovod_params"}
    more = {"horovod_passed", "compat_entries", "not_pytorch", "training", "imports"}
    if type(value) is not dict or set(value) != keys | more:
        return None
    programs = []
    for item in value["programs"] if type(value["programs"]) is list else [None]:
        types = [type(v) for v in item] if type(item) is list else []
        if types != [str, str, str, str, str, int]:
            return None
        entry, found_by, framework, version, decided_by, files = item  # type: ignore[misc]
        programs.append(Program(entry, found_by, framework, version, decided_by, files))
    styles, shared = _str_lists(value["tf_style"]), _str_lists(value["shared"])
    passed = _str_lists(value["horovod_passed"])
    entries, compat = _strs(value["tf2_entries"]), _strs(value["compat_entries"])
    others, params = _strs(value["not_pytorch"]), value["horovod_params"]
    training, graph = _strs(value["training"]), _str_lists(value["imports"])
    if styles is None or shared is None or passed is None or entries is None or compat is None:
        return None
    if others is None or training is None or graph is None:
        return None
    if any(len(item) != 2 for item in styles.values()) or type(params) is not dict:
        return None
    horovod: dict[str, dict[str, str]] = {}
    for path, names in params.items():
        if type(path) is not str or type(names) is not dict:
            return None
        if any(type(k) is not str or type(v) is not str for k, v in names.items()):
            return None
        horovod[path] = dict(names)
    return ProgramFacts(
        tuple(programs),
        {path: (item[0], item[1]) for path, item in styles.items()},
        frozenset(entries),
        {path: tuple(v) for path, v in shared.items()},
        horovod,
        {path: tuple(v) for path, v in passed.items()},
        frozenset(compat),
        frozenset(others),
        frozenset(training),
        {path: tuple(targets) for path, targets in graph.items()},
    )
