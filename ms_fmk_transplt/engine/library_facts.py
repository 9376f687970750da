"""What ``--deps`` found in the installed libraries a project imports (run/library_analysis.py
computes it before migrating, scan/library_reach.py propagates it): for each library, the APIs
that reach CUDA-specific code, each with one path down to the line, and the names its modules
re-export. The deps family (engine/rules/deps/) asks it at the project's call sites."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

CUDA = "cuda"  # reaches code that fails without CUDA
CPU = "cpu"  # reaches code that takes another path (or turns a CUDA feature off) without CUDA


@dataclass(frozen=True)
class Reach:
    kind: str  # CUDA or CPU
    path: tuple[str, ...]  # "pkg.mod.f (pkg/mod.py:12)", ..., "pkg/mod.py:40: x.cuda()"
    conditional: bool = False  # the path passes a test (an option, a setting): not always


@dataclass(frozen=True)
class LibraryFacts:
    name: str  # the top-level import name
    dist: str  # its distribution ("" for a source tree)
    version: str  # "" when unknown
    reach: dict[str, Reach] = field(default_factory=dict)  # dotted API -> how it reaches
    aliases: dict[str, str] = field(default_factory=dict)  # re-exported name -> its target

    def label(self) -> str:
        return f"{self.name} {self.version}" if self.version else self.name


def resolved(dotted: str, aliases: dict[str, str], known: Callable[[str], bool]) -> str:
    """``dotted`` through the re-exports (``aliases``: name -> what it names; the longest
    re-exported prefix first) until a name ``known`` says is defined, else the last name
    reached (at most 16 steps: a cycle of re-exports ends)."""
    seen: set[str] = set()
    while dotted not in seen and len(seen) < 16:
        seen.add(dotted)
        if known(dotted):
            return dotted
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            prefix = ".".join(parts[:i])
            target = aliases.get(prefix)
            if target is not None and target != prefix:
                dotted = ".".join([target, *parts[i:]])
                break
        else:
            return dotted
    return dotted


@dataclass(frozen=True, eq=False)
class DepsFacts:
    libraries: dict[str, LibraryFacts] = field(default_factory=dict)  # top-level name ->

    @cached_property
    def words(self) -> re.Pattern[bytes] | None:
        """Matches a file naming one of the libraries (the pre-filter's test)."""
        if not self.libraries:
            return None
        names = b"|".join(re.escape(n.encode()) for n in sorted(self.libraries))
        return re.compile(rb"\b(?:" + names + rb")\b")

    @cached_property
    def anchor_words(self) -> tuple[str, ...]:
        """The libraries' names and the last names of the APIs that reach: a statement naming
        one is walked (``train_pipeline(root)`` names no library)."""
        words = set(self.libraries)
        for library in self.libraries.values():
            for dotted in [*library.reach, *library.aliases]:
                last = dotted.rpartition(".")[2]
                if last.isidentifier():
                    words.add(last)
        return tuple(sorted(words))

    def lookup(self, dotted: str) -> tuple[LibraryFacts, str, Reach] | None:
        """The library, the API (as the library defines it) and how it reaches CUDA-specific
        code, for a dotted name the project uses (``trainer.Trainer``; re-exports followed)."""
        library = self.libraries.get(dotted.split(".", 1)[0])
        if library is None:
            return None
        api = resolved(dotted, library.aliases, library.reach.__contains__)
        found = library.reach.get(api)
        return (library, api, found) if found is not None else None

    def fingerprint(self) -> str:
        """The facts as text, for the run's fingerprint (cached results depend on them)."""
        return repr(
            [
                (n, f.version, sorted(f.reach.items()), sorted(f.aliases.items()))
                for n, f in sorted(self.libraries.items())
            ]
        )
