"""What a run of ``kit assess`` recorded, read back for a migration (``--assessed``;
scan/assess_results.py reads ops.csv): per project file, the torch APIs its lines reached during
the recorded training steps, with the dtypes, keyword arguments and shapes seen. The assess
family (engine/rules/assess/) asks it for the file it finishes and judges each API again for the
migration's own target version."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class AssessedApi:
    api: str  # the torch-level name (``torch.nn.functional.interpolate``)
    line: int  # the project line that reached it (the input's numbering)
    library: str  # the library it was reached through ("" : the project's own call)
    calls: int
    dtypes: frozenset[str]
    arguments: frozenset[str]  # the keyword arguments given (not None, not the default)
    shapes: str  # ops.csv's Shapes cell
    dynamic: bool  # its shapes differed between steps


@dataclass(frozen=True, eq=False)
class AssessFacts:
    source: str  # the ops.csv read, as shown
    files: dict[str, tuple[AssessedApi, ...]] = field(default_factory=dict)  # path -> its APIs

    def fingerprint(self) -> str:
        """The facts as text, for the run's fingerprint (cached results depend on them)."""
        return repr(sorted((path, sorted(map(repr, apis))) for path, apis in self.files.items()))
