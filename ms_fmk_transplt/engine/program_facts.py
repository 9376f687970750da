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


@dataclass(frozen=True)
class Program:
    """One program: its entry file (path from the input root) and what was found of it."""

    entry: str
    found_by: str  # "__main__ guard", "launcher run.sh:3", "console script setup.py"
    framework: str  # "tensorflow", "torch", "" (neither is imported)
    version: str  # the framework's major version ("1", "2"; "" when unknown or no TensorFlow)
    decided_by: str  # the evidence of the version ("pin requirements.txt:2 tensorflow==1.15")
    files: tuple[str, ...]  # the project's files it imports (the entry first)

    def as_json(self) -> dict[str, object]:
        return {
            "entry": self.entry,
            "found_by": self.found_by,
            "framework": self.framework,
            "version": self.version,
            "decided_by": self.decided_by,
            "files": len(self.files),
        }


@dataclass(frozen=True)
class FileProgram:
    """What the programs say of one file (ProgramFacts.for_file)."""

    style: str  # its TensorFlow style ("" when the programs give it none)
    entry: bool  # the entry of a TF 2.x program: the NPU device is opened there
    horovod: dict[str, str]  # parameters a caller passes Horovod in -> its kind ("tf1"/"keras")
    passes_horovod: tuple[str, ...]  # where the file passes Horovod on as a value
    compat_entry: bool = False  # the entry of a TF 2.x program running compat.v1 graph code


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

    def for_file(self, path: str) -> FileProgram:
        return FileProgram(
            self.style(path),
            path in self.tf2_entries,
            self.horovod_params.get(path, {}),
            self.horovod_passed.get(path, ()),
            path in self.compat_entries,
        )

    def fingerprint(self) -> str:
        """What of the model the migrated files depend on, as text ("" for a model that says
        nothing of TensorFlow)."""
        if not (self.tf_style or self.tf2_entries or self.horovod_params or self.horovod_passed):
            return ""
        compat = sorted(self.compat_entries)
        styles = sorted((path, style) for path, (style, _) in self.tf_style.items())
        horovod = sorted((p, sorted(n.items())) for p, n in self.horovod_params.items())
        passed = sorted(self.horovod_passed.items())
        entries = sorted(self.tf2_entries)
        return f"tf styles {styles!r} {entries!r} {horovod!r} {passed!r} {compat!r}"

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
