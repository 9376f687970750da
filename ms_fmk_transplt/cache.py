"""Incremental re-runs: migration results cached by file content + rules + tool version.

A cache hit skips parsing and transforming entirely; the output is the same bytes the cold run
wrote. Entries are written atomically (temp file + rename), so parallel workers and interrupted
runs never leave a torn entry. Location: --cache-dir, else $MS_FMK_TRANSPLT_CACHE, else
$XDG_CACHE_HOME/ms_fmk_transplt (~/.cache/ms_fmk_transplt); --no-cache (or
MS_FMK_TRANSPLT_CACHE=off) disables it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ms_fmk_transplt import __version__
from ms_fmk_transplt.tables import rules_dir

FORMAT = 3


def default_dir() -> Path | None:
    env = os.environ.get("MS_FMK_TRANSPLT_CACHE")
    if env:
        return None if env.lower() in ("off", "0", "no", "none") else Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ms_fmk_transplt"


@lru_cache(maxsize=16)
def fingerprint(extra: str = "") -> str:
    """Everything besides a file's content that decides its migration."""
    h = hashlib.sha256(f"{FORMAT}|{__version__}|{extra}".encode())
    package = Path(__file__).resolve().parent
    sources = sorted(package.rglob("*.py"))  # the tool's own code: any change invalidates
    rules = rules_dir()
    for path in [*sorted(rules.rglob("*.json")), *sources]:
        h.update(
            path.relative_to(rules).as_posix().encode()
            if path.is_relative_to(rules)
            else path.name.encode()
        )
        h.update(path.read_bytes())
    return h.hexdigest()


@dataclass(frozen=True)
class Cache:
    root: Path
    fingerprint: str

    def key(self, rel: str, data: bytes) -> str:
        return hashlib.sha256(
            f"{self.fingerprint}|{rel}|".encode("utf-8", "surrogateescape") + data
        ).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.pkl"

    def get(self, key: str) -> Any:
        try:
            with self._path(key).open("rb") as fh:
                return pickle.load(fh)
        except (OSError, pickle.PickleError, EOFError, AttributeError, ValueError):
            return None

    def put(self, key: str, value: object) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except OSError:
            pass  # a cache that cannot be written only costs speed
