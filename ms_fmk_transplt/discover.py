"""Step 1 of the data flow: find the files of the input and where each goes in the output."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ms_fmk_transplt.errors import UserError

OUTPUT_SUFFIX = "_msft"
ANALYSIS_SUFFIX = "_analysis"  # --analyse: reports only


@dataclass(frozen=True)
class Project:
    """What to migrate: ``root`` is the folder whose relative layout is reproduced."""

    root: Path
    name: str
    single_file: Path | None = None  # set when the input was one .py file
    skip: Path | None = None  # a folder inside ``root`` left out: the result cache's

    def files(self) -> Iterator[Path]:
        """Every file to copy, as paths relative to ``root``, in a stable order."""
        if self.single_file is not None:
            yield self.single_file.relative_to(self.root)
            return

        def unreadable(error: OSError) -> None:
            raise UserError(error.filename, f"cannot read this folder ({error.strerror})")

        for dirpath, dirnames, filenames in os.walk(self.root, onerror=unreadable):
            base = Path(dirpath)
            dirnames[:] = sorted(d for d in dirnames if base / d != self.skip)
            for name in sorted(filenames):
                yield (base / name).relative_to(self.root)
            for name in dirnames:  # symlinked folders are not descended into: keep them as links
                if (base / name).is_symlink():
                    yield (base / name).relative_to(self.root)


def resolve_project(input_path: str) -> Project:
    path = Path(input_path)
    if not path.exists():
        raise UserError(input_path, "input does not exist")
    path = path.resolve()
    if path.is_dir():
        return Project(root=path, name=path.name or "root")
    if path.is_file():
        if path.suffix != ".py":
            raise UserError(input_path, "input must be a folder or a .py file")
        return Project(root=path.parent, name=path.parent.name or "root", single_file=path)
    raise UserError(input_path, "input is neither a folder nor a .py file")


def output_dir_for(project: Project, output: str, suffix: str = OUTPUT_SUFFIX) -> Path:
    out = Path(output)
    if out.exists() and not out.is_dir():
        raise UserError(output, "output exists and is not a folder")
    resolved = out.resolve()
    if project.single_file is None and resolved == project.root:
        raise UserError(output, "output must not be the input folder itself")
    if project.single_file is None and project.root in resolved.parents:
        raise UserError(output, f"output must not be inside the input folder {project.root}")
    return resolved / f"{project.name}{suffix}"
