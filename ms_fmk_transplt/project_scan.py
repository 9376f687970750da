"""Before migrating: read the input's Python files once for what one file tells the others
(engine/spans/project_facts.py: the CUDA-only code each module defines)."""

from __future__ import annotations

from collections.abc import Iterator

from ms_fmk_transplt.discover import Project
from ms_fmk_transplt.engine.spans.project_facts import ProjectFacts, build_facts
from ms_fmk_transplt.tables import load_tables

MAX_BYTES = 2 * 2**20  # larger files are generated code, not modules others import kernels from


def _sources(project: Project) -> Iterator[tuple[str, bytes]]:
    for rel_path in project.files():
        src = project.root / rel_path
        if src.suffix != ".py" or src.is_symlink() or not src.is_file():
            continue
        try:
            if src.stat().st_size > MAX_BYTES:
                continue
            yield rel_path.as_posix(), src.read_bytes()
        except OSError:
            continue  # reported when the file itself is migrated


def scan_project(project: Project, target_version: str) -> ProjectFacts:
    return build_facts(_sources(project), load_tables(target_version).unsupported)


def facts_fingerprint(facts: ProjectFacts | None) -> str:
    """The facts as text, for the fingerprint of a run (cached results depend on them)."""
    if facts is None:
        return ""
    modules = sorted((m, sorted(n.items())) for m, n in facts.cuda_only.items())
    return repr((modules, sorted(facts.op_namespaces)))
