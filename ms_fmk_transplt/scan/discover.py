"""Step 1 of the data flow: find the files of the input and where each goes in the output."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ms_fmk_transplt.errors import UserError

OUTPUT_SUFFIX = "_msft"
ANALYSIS_SUFFIX = "_analysis"  # --analyse: reports only
# the bounds of the walk: deeper folders and longer paths are left out with a warning (a deeper
# walk ran out of Python's recursion limit; a longer path is refused by the system: ENAMETOOLONG)
MAX_DEPTH = 128  # folder levels below the input
PATH_MAX = 4096  # bytes of a path the system accepts, with its terminating NUL (Linux)
TOO_DEEP = f"a folder nested more than {MAX_DEPTH} levels deep"


@dataclass(frozen=True)
class Project:
    """What to migrate: ``root`` is the folder whose relative layout is reproduced."""

    root: Path
    name: str
    single_file: Path | None = None  # set when the input was one .py file
    skip: Path | None = None  # a folder inside ``root`` left out: the result cache's

    def files(
        self, skipped: list[tuple[Path, str]] | None = None, outputs: tuple[Path, ...] = ()
    ) -> Iterator[Path]:
        """Every file to copy, as paths relative to ``root``, in a stable order (a folder's
        files, then its linked folders, then each of its folders in turn). A folder nested more
        than MAX_DEPTH levels deep, and a path longer than the system allows (PATH_MAX, in the
        input or under any of ``outputs``, the folders the files are written into) are left
        out, each appended to ``skipped`` with the reason (never descended into: no recursion
        and no path the system refuses)."""
        if self.single_file is not None:
            yield self.single_file.relative_to(self.root)
            return
        # the bytes left for "<rel>" after "<folder>/", and the NUL
        room = PATH_MAX - 2 - max(map(_path_bytes, (self.root, *outputs)))
        left_out = [] if skipped is None else skipped

        def unreadable(error: OSError) -> None:
            raise UserError(error.filename, f"cannot read this folder ({error.strerror})")

        def deep(folder: Path) -> None:
            left_out.append((folder.relative_to(self.root), TOO_DEEP))

        for folder, folders, names in walk(self.root, unreadable, deep):
            kept = sorted(n for n in folders if folder / n != self.skip)
            links = [n for n in kept if (folder / n).is_symlink()]  # copied as links
            for name in sorted(names) + links:
                rel = (folder / name).relative_to(self.root)
                problem = _too_long(rel, room)
                if problem is None:
                    yield rel
                else:
                    left_out.append((rel, problem))
            folders[:] = []  # walked in this order (deeper than MAX_DEPTH: ``deep``)
            for name in kept:
                rel = (folder / name).relative_to(self.root)
                problem = None if name in links else _too_long(rel, room)
                if problem is not None:
                    left_out.append((rel, problem))
                elif name not in links:
                    folders.append(name)


def walk(
    top: Path,
    onerror: Callable[[OSError], None] | None = None,
    deep: Callable[[Path], None] | None = None,
) -> Iterator[tuple[Path, list[str], list[str]]]:
    """``os.walk(top)``, top-down (the caller may prune the folder names it is given; links to
    folders are listed and never descended into), without recursion (os.walk recursed once per
    level) and no deeper than MAX_DEPTH levels below ``top``: each folder left out is given to
    ``deep``."""
    stack = [(top, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as entries:
                found = [(e.name, _is_folder(e), e.is_symlink()) for e in entries]
        except OSError as error:
            if onerror is not None:
                onerror(error)
            continue
        folders = [name for name, is_dir, _ in found if is_dir]
        linked = {name for name, is_dir, link in found if is_dir and link}
        yield folder, folders, [name for name, is_dir, _ in found if not is_dir]
        below = []
        for name in folders:
            if name in linked:
                continue
            if depth + 1 > MAX_DEPTH:
                if deep is not None:
                    deep(folder / name)
                continue
            below.append((folder / name, depth + 1))
        stack.extend(reversed(below))


def _path_bytes(path: Path) -> int:
    return len(os.fsencode(path))


def _too_long(rel: Path, room: int) -> str | None:
    size = _path_bytes(rel)
    if size <= room:
        return None
    return (
        f"a path of {size} bytes inside the input: with the input or output folder before it, "
        f"longer than the system allows ({PATH_MAX} bytes)"
    )


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # (a link to a folder too, as os.walk lists it)
    except OSError:
        return False


def resolve_project(input_path: str) -> Project:
    try:
        return _project(input_path)
    except OSError as exc:  # e.g. a path longer than the system allows (ENAMETOOLONG)
        raise UserError(input_path, f"cannot read the input ({exc.strerror})") from exc


def _project(input_path: str) -> Project:
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
    try:
        if out.exists() and not out.is_dir():
            raise UserError(output, "output exists and is not a folder")
        resolved = out.resolve()
    except OSError as exc:  # e.g. a path longer than the system allows (ENAMETOOLONG)
        raise UserError(output, f"cannot use this output folder ({exc.strerror})") from exc
    if project.single_file is None and resolved == project.root:
        raise UserError(output, "output must not be the input folder itself")
    if project.single_file is None and project.root in resolved.parents:
        raise UserError(output, f"output must not be inside the input folder {project.root}")
    return resolved / f"{project.name}{suffix}"
