"""The folders ``--deps`` looks packages up in (``deps_folders``): a site-packages folder, a
venv or conda env, a library's source tree, a package folder; ``auto`` asks the interpreter
(``$VIRTUAL_ENV``'s, else the ``python3`` on PATH) for its paths with ``-I -S`` (no ``site``, so
no ``.pth`` file runs, no user site, no ``PYTHON*`` variable). site_packages.py finds the
packages in them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from ms_fmk_transplt.errors import UserError
from ms_fmk_transplt.scan.site_packages import INFO_SUFFIXES

_ASK_TIMEOUT = 15.0
# what `python3 -I -S -c` runs: sysconfig only (no site, no library), its paths as JSON. Before
# Python 3.11 it is site that makes a venv's pyvenv.cfg the prefix: without it, the venv is
# recognised here as site would (pyvenv.cfg beside the executable or one folder up).
_ASK_PATHS = """import json, os, sys, sysconfig
here = os.path.dirname(sys.executable) if sys.executable else ""
base = {}
for venv in (here, os.path.dirname(here)) if here else ():
    if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
        base = {"base": venv, "platbase": venv}
        break
print(json.dumps([sysconfig.get_path(key, vars=base) for key in ("purelib", "platlib")]))
"""
_NO_ANSWER = "python3 did not say its site-packages"
_SOURCE_TREE_FILES = ("setup.py", "setup.cfg", "pyproject.toml")


def deps_folders(values: Sequence[str], environ: Mapping[str, str]) -> list[Path]:
    """The folders packages are looked up in, from the --deps values, in order, duplicates
    (the same folder once resolved) once. Each value:

    - ``auto``: the site-packages of ``$VIRTUAL_ENV`` (in ``environ``) when set (read as a
      value naming it would be), else those the ``python3`` on ``environ["PATH"]`` names when
      asked with ``python3 -I -S -c ...`` (no shell, 15 s; its output must be a JSON list of
      text; the paths of it that are folders);
    - a venv (a folder with pyvenv.cfg) or another installation prefix (a conda env): its
      ``lib/python3*/site-packages``, ``lib64/python3*/site-packages``, ``Lib/site-packages``;
    - a library's source tree (setup.py / setup.cfg / pyproject.toml): itself, and its ``src/``;
    - a folder that is itself a package (``__init__.py``): the folder holding it (the caller
      asks ``find_packages`` for that package's name);
    - a site-packages folder (a ``*.dist-info`` / ``*.egg-info``, a package or a module in
      it): itself.

    Raises UserError naming the value for a path that does not exist, is not a folder or holds
    no Python package, and when the interpreter is missing or does not answer."""
    out: list[Path] = []
    seen: set[str] = set()
    for value in values:
        for folder in _value_folders(value, environ):
            key = os.path.realpath(folder)
            if key not in seen:
                seen.add(key)
                out.append(folder)
    return out


def _value_folders(value: str, environ: Mapping[str, str]) -> list[Path]:
    if value != "auto":
        return _path_folders(Path(value))
    venv = environ.get("VIRTUAL_ENV", "")
    if venv:
        return _path_folders(Path(venv))
    return _interpreter_folders(environ)


def _path_folders(path: Path) -> list[Path]:
    path = path.absolute()
    if not path.exists():  # (a dangling link too)
        raise UserError(path, "does not exist")
    if not path.is_dir():
        raise UserError(path, "is not a folder")
    prefix = _venv_site_packages(path)
    if prefix or (path / "pyvenv.cfg").is_file():
        found = prefix
    elif any((path / name).is_file() for name in _SOURCE_TREE_FILES):
        found = [path] + ([path / "src"] if (path / "src").is_dir() else [])
    elif (path / "__init__.py").is_file():
        found = [path.parent]
    elif _holds_packages(path):
        found = [path]
    else:
        found = []
    if not found:
        raise UserError(path, "holds no Python package")
    return found


def _venv_site_packages(venv: Path) -> list[Path]:
    found = []
    for lib in ("lib", "lib64"):
        found.extend(sorted(p for p in venv.glob(f"{lib}/python3*/site-packages") if p.is_dir()))
    windows = venv / "Lib" / "site-packages"
    if windows.is_dir():
        found.append(windows)
    return found


def _holds_packages(folder: Path) -> bool:
    """A dist-info / egg-info, a package (``<name>/__init__.py``) or a module in ``folder``."""
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                name = entry.name
                if name.endswith(INFO_SUFFIXES) or name.endswith(".py"):
                    return True
                if entry.is_dir() and os.path.isfile(os.path.join(entry.path, "__init__.py")):
                    return True
    except OSError:
        return False
    return False


def _interpreter_folders(environ: Mapping[str, str]) -> list[Path]:
    python = shutil.which("python3", path=environ.get("PATH", ""))
    if python is None:
        raise UserError("auto", "python3 not found on PATH")
    answer = _ask_paths(python, environ)
    found = [Path(p) for p in answer if p and os.path.isabs(p) and os.path.isdir(p)]
    if not found:
        raise UserError(python, f"{_NO_ANSWER}: none of its paths is a folder")
    return found


def _ask_paths(python: str, environ: Mapping[str, str]) -> list[str]:
    """sysconfig's purelib and platlib, as the interpreter ``python`` says them."""

    def failed(reason: str) -> UserError:
        return UserError(python, f"{_NO_ANSWER}: {reason}")

    try:
        done = subprocess.run(
            [python, "-I", "-S", "-c", _ASK_PATHS],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_ASK_TIMEOUT,
            env=dict(environ),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise failed(f"no answer within {_ASK_TIMEOUT:g} s") from None
    except OSError as exc:
        raise failed(exc.strerror or type(exc).__name__) from None
    if done.returncode != 0:
        raise failed(f"exit status {done.returncode}{_last_line(done.stderr)}")
    try:
        answer = json.loads(done.stdout.decode("utf-8"))
    except ValueError:  # (UnicodeDecodeError and JSONDecodeError are ValueErrors)
        answer = None
    if not isinstance(answer, list) or not all(isinstance(p, str) for p in answer):
        raise failed("its output is not a JSON list of paths")
    return answer


def _last_line(stderr: bytes) -> str:
    """``: <the last line of stderr>``, shortened and printable, or ""."""
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    if not lines:
        return ""
    text = "".join(c if c.isprintable() else "?" for c in lines[-1].strip())
    return f": {text[:120]}"
