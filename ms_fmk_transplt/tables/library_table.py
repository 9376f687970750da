"""The library table (rules/libraries.json): what each third-party training library does on an
NPU host, and what to do about it.

A library lists the modules it ships (``modules``: entries by dotted name, longest match wins,
``supported`` ones give no row), whether it has an Ascend path (``ascend``: the package and the
first version with it), the call arguments that select a CUDA-only path (``arguments``) and the
public source each fact was read at. The unsupported table looks its module entries up by name
(engine/rules/unsupported/); the libraries family (engine/rules/libraries/) reports the arguments
and folds every row of one library in one file into one row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AscendPath:
    package: str  # what to install (pip name)
    min_version: str  # the first release with the NPU path
    how: str  # how it is switched on

    def text(self) -> str:
        return f"Ascend path: {self.package} >= {self.min_version} ({self.how})"


@dataclass(frozen=True)
class Argument:
    """A call argument that selects a CUDA-only path: ``keyword`` given one of ``values``
    (a string constant), or any true constant when ``values`` is empty."""

    library: str
    keyword: str
    values: tuple[str, ...]
    calls: tuple[str, ...]  # leaf names of the calls it applies to (empty: any call)
    action: str
    tip: str
    in_file: bool = False  # a call of that name in a file using the library (Actor.options)
    # the calls of subclasses too: a class of the file deriving from one of ``calls``, any
    # class of these packages (trl's SFTConfig, DPOConfig, ... subclass TrainingArguments)
    subclasses: tuple[str, ...] | None = None
    pattern: str = ""  # a string value matching it (a Hub kernel "org/name", attn_implementation)

    def matches(self, value: object) -> bool:
        if self.pattern:
            return isinstance(value, str) and re.fullmatch(self.pattern, value) is not None
        if not self.values:
            return value is True or (isinstance(value, (int, float)) and bool(value))
        return isinstance(value, str) and value in self.values


@dataclass(frozen=True)
class CudaOnlyPaths:
    """What makes the GPU arm of a "cuda" test a CUDA-only library path (cuda_only.guard):
    the entries of the table marked ``gate``."""

    calls: frozenset[str]  # last names of calls: BitsAndBytesConfig
    keywords: frozenset[str]  # load_in_8bit=... (anything but False/None)
    keyword_values: frozenset[tuple[str, str]]  # attn_implementation="flash_attention_2"


@dataclass(frozen=True)
class LibraryString:
    """A string literal that selects a CUDA-only path in a file using the library: a value
    held for later (``attn_implementation = "flash_attention_2"``, a default, a flag value) or,
    with ``dict_key``, a key of a dict display (Ray's ``{"GPU": 1}`` bundles)."""

    library: str
    value: str
    dict_key: bool
    action: str
    tip: str


@dataclass(frozen=True)
class Library:
    name: str  # the pip package, as users know it
    roots: tuple[str, ...]  # its top-level module names
    ascend: AscendPath | None
    source: str  # where the facts were read, with the version
    device_neutral: bool  # its own code runs on any device: only its listed parts are CUDA-only
    # a kernel language with an Ascend build (Triton): the project's own NPU kernels need no port
    own_ascend_kernels: bool = False
    npu_parts: str = ""  # what of a CUDA library runs on the NPU in some build (bitsandbytes)
    # its module entries' action is in the library itself, not in the files using it (coqui's
    # trainer picks its device with torch.cuda): their rows in many files are one row per run
    per_run: bool = False


class LibraryTable:
    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.libraries: list[Library] = []
        self.by_root: dict[str, Library] = {}
        self.by_name: dict[str, Library] = {}
        self.module_rows: list[dict[str, Any]] = []  # in the unsupported table's entry shape
        self.arguments: dict[str, list[Argument]] = {}  # by keyword
        self.strings: dict[str, LibraryString] = {}  # by value
        for lib in raw["libraries"]:
            ascend = lib.get("ascend")
            library = Library(
                lib["library"],
                tuple(sorted({m["module"].split(".")[0] for m in lib["modules"]})),
                AscendPath(ascend["package"], ascend["min_version"], ascend["how"])
                if ascend
                else None,
                lib["source"],
                lib.get("device_neutral", False),
                lib.get("own_ascend_kernels", False),
                lib.get("npu_parts", ""),
                bool(lib.get("per_run")),
            )
            self.libraries.append(library)
            self.by_name[library.name] = library
            for root in library.roots:
                self.by_root[root] = library
            self.module_rows.extend(lib["modules"])
            for text in lib.get("strings", ()):
                self.strings[text["value"]] = LibraryString(
                    library.name,
                    text["value"],
                    bool(text.get("dict_key")),
                    text["action"],
                    text["tip"],
                )
            for arg in lib.get("arguments", ()):
                self.arguments.setdefault(arg["keyword"], []).append(
                    Argument(
                        library.name,
                        arg["keyword"],
                        tuple(arg.get("values", ())),
                        tuple(arg.get("calls", ())),
                        arg["action"],
                        arg["tip"],
                        bool(arg.get("in_file")),
                        tuple(arg["subclasses"]) if "subclasses" in arg else None,
                        arg.get("pattern", ""),
                    )
                )
        self.words = self._words()
        # dict keys ("GPU") are too common a word to make a file worth parsing: lines only
        self.line_words = tuple(sorted({*self.words, *self.strings}))
        # a file importing one of these is a program of another framework (a Flax script that
        # parses its flags with transformers' TrainingArguments): no Ascend-path caveat there
        frameworks = "|".join(re.escape(f) for f in raw.get("other_frameworks", ())) or "(?!)"
        self.other_framework = re.compile(
            rb"(?:^|[\r\n])[ \t]*(?:import|from)[ \t]+(?:" + frameworks.encode() + rb")\b"
        )  # any line ending
        self.gate_paths = self._gate_paths(raw)
        # caveats that ask nothing of the file using them (the library selects the NPU itself)
        self._entries = {m["module"]: m for m in self.module_rows}

    def entry(self, api: str) -> dict[str, Any] | None:
        """The module entry an API falls under (the longest listed prefix), or None."""
        parts = api.split(".")
        for end in range(len(parts), 0, -1):
            found = self._entries.get(".".join(parts[:end]))
            if found is not None:
                return found
        return None

    def asks_no_change(self, api: str) -> bool:
        """Whether the module entry an API falls under (the longest listed prefix) is marked
        ``no_change``: its caveat names the Ascend path and nothing to do in the file."""
        entry = self.entry(api)
        return entry is not None and bool(entry.get("no_change"))

    def per_run(self, api: str) -> bool:
        """Whether the module entry an API falls under is marked ``per_run`` (or its library
        is, and the entry does not say otherwise): what to do about it is done in the library,
        once, not in each file using it (coqui's ``trainer.TrainerArgs``, basicsr's models)."""
        entry = self.entry(api)
        if entry is None or entry.get("supported"):
            return False
        library = self.library_of(api)
        return bool(entry.get("per_run", library is not None and library.per_run))

    @staticmethod
    def _gate_paths(raw: dict[str, Any]) -> CudaOnlyPaths:
        libraries = raw["libraries"]
        arguments = [a for lib in libraries for a in lib.get("arguments", ()) if a.get("gate")]
        return CudaOnlyPaths(
            frozenset(
                m["module"].rsplit(".", 1)[-1]
                for lib in libraries
                for m in lib["modules"]
                if m.get("gate")
            ),
            frozenset(a["keyword"] for a in arguments if not a.get("values")),
            frozenset((a["keyword"], v) for a in arguments for v in a.get("values", ())),
        )

    def _words(self) -> tuple[str, ...]:
        """The words that make a file worth parsing and a line worth visiting: the top-level
        name of a library whose own code is CUDA code, the last name of each listed part of a
        device-neutral one (a file that imports transformers for a model class is not read
        for it; an entry's ``word`` instead where that name is too common: basicsr's ``train``),
        and the argument keywords (but those whose calls are such words already)."""
        words: set[str] = set()
        for row in self.module_rows:
            module = row["module"]
            neutral = not self.kernel_library(module)
            word = row.get("word") or (
                module.rsplit(".", 1)[-1] if neutral else module.split(".", 1)[0]
            )
            words.add(word)
        words.update(v for v, s in self.strings.items() if not s.dict_key)
        for keyword, arguments in self.arguments.items():  # unless its calls are words already
            if any(not a.calls or not set(a.calls) <= words for a in arguments):
                words.add(keyword)
        for arguments in self.arguments.values():  # a subclass's call: its values are the words
            words.update(v for a in arguments if a.subclasses is not None for v in a.values)
        return tuple(sorted(words))

    def kernel_library(self, module: str) -> bool:
        """Whether a module belongs to a library whose own code is CUDA code (not a
        device-neutral one such as transformers, whose listed parts alone are CUDA-only)."""
        library = self.by_root.get(module.split(".", 1)[0])
        return library is not None and not library.device_neutral

    def library_of(self, api: str) -> Library | None:
        """The library a row's API belongs to (by its leading module name)."""
        end = 0
        while end < len(api) and (api[end].isalnum() or api[end] == "_"):
            end += 1
        return self.by_root.get(api[:end])
