"""The unsupported-API table (rules/unsupported_api.json): what cannot run on the NPU as is."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ms_fmk_transplt.tables.library_table import LibraryTable

ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
# NAME=value inside a longer string: a shell command line that sets a variable
ENV_ASSIGNMENT = re.compile(r"(?<![A-Za-z0-9_$])([A-Z][A-Z0-9_]*)=")
# a command line (not prose such as "set X=1 before importing torch"): the assignment opens the
# string or a command, or the string runs a launcher
COMMAND_START = re.compile(r"(?:^|[;&|]\s*|\bexport\s+)\s*[A-Z][A-Z0-9_]*=")
LAUNCHERS = re.compile(r"\b(?:python3?|torchrun|srun|mpirun|deepspeed|accelerate|bash|sh)\s")
IMPORT_MODULE = "importlib.import_module"  # its literal argument is an import too
IMPORT_ERRORS = ("ImportError", "ModuleNotFoundError", "Exception")  # a fallback for imports
NO_ROW = "none"  # an apis entry's action: the name is listed to say it is no row (tip: why)


@dataclass(frozen=True)
class Entry:
    key: str
    category: str
    action: str
    tip: str
    prefix: bool = False
    when: str | None = None
    supported: bool = False

    def optional(self) -> Entry:
        """The same entry for an import inside a ``try`` that catches ImportError: the code has
        a fallback, so the row is a caveat, not must-fix work."""
        return dataclasses.replace(
            self, action="caveat", tip=f"optional import with an ImportError fallback; {self.tip}"
        )

    def unreached(self) -> Entry:
        """The same entry inside ``if torch.cuda.is_available():`` kept on torch.cuda (it guards
        a capability probe): the code never runs on an NPU host; a caveat."""
        tip = (
            "inside an `if torch.cuda.is_available():` kept on torch.cuda: never runs on the NPU; "
        )
        return dataclasses.replace(self, action="caveat", tip=tip + self.tip)

    def probed(self) -> Entry:
        """The same entry where the file tests for the API first (``X if hasattr(dist,
        "ProcessGroupNCCL") else None``): the NPU's torch build lacks it, so the other branch
        runs; a caveat, not must-fix work."""
        name = self.key.rsplit(".", 1)[-1]
        tip = f'used behind hasattr(..., "{name}"), absent on the NPU: the other branch runs; '
        return dataclasses.replace(self, action="caveat", tip=tip + self.tip)


def _longest_dotted(entries: dict[str, Entry], name: str) -> Entry | None:
    """The entry of ``name`` itself, else of its longest dotted prefix that matches by prefix
    (the same answer as ``_longest``, by dictionary lookups)."""
    entry = entries.get(name)
    if entry is not None:
        return entry
    cut = name.rfind(".")
    while cut != -1:
        entry = entries.get(name[:cut])
        if entry is not None and entry.prefix:
            return entry
        cut = name.rfind(".", 0, cut)
    return None


def _longest(entries: dict[str, Entry], name: str, dotted: bool = True) -> Entry | None:
    if dotted:
        return _longest_dotted(entries, name)
    best: Entry | None = None
    for key, entry in entries.items():
        if name == key:
            hit = True
        elif dotted:
            hit = entry.prefix and name.startswith(key + ".")
        else:
            hit = entry.prefix and name.startswith(key)
        if hit and (best is None or len(key) > len(best.key)):
            best = entry
    return best


_REGISTERS = re.compile(
    rb"(?:custom_op|triton_op|define|impl|register_fake|register_kernel|Library)\(\s*"
    rb"[\"']([A-Za-z_][A-Za-z0-9_]*)(?:::|[\"'])"
)


def registered_op_namespaces(source: bytes) -> frozenset[str]:
    """Operator namespaces a file registers in Python (``torch.library.custom_op("proj::f")``,
    ``Library("proj", "DEF")``, ``@triton_op("proj::k")``): its ``torch.ops.proj.*`` are the
    project's own Python/Triton operators, not a CUDA extension."""
    if b"library" not in source and b"triton_op" not in source:
        return frozenset()
    return frozenset(m.decode() for m in _REGISTERS.findall(source))


def is_command_line(text: str) -> bool:
    """A command line, not prose: an assignment opens it or a command, or it runs a launcher."""
    return COMMAND_START.search(text) is not None or LAUNCHERS.search(text) is not None


def checks_presence(source: bytes, name: str) -> bool:
    """Whether the file falls back when an optionally imported name is missing: an ``if``
    testing it (``if fn is None:``, ``if not fn:``, ``if fn is not None:``) whose body does not
    raise, or a boolean guard (``fn is not None and ...``, ``fn is None or ...``). An ``assert``
    or an ``if`` that raises is no fallback: the call fails on the NPU all the same."""
    word = re.escape(name.encode())
    tests = rb"(?m)^[ \t]*(?:el)?if\b[^\n]*\b" + word + rb"\b[^\n#]*:[ \t]*(?:#[^\n]*)?\n?\s*(\S+)"
    for match in re.finditer(tests, source):
        if match.group(1) not in (b"raise", b"assert"):
            return True
    guard = rb"\b" + word + rb"\s+is\s+not\s+None\s+and\b|\b" + word + rb"\s+is\s+None\s+or\b"
    return re.search(guard, source) is not None


CUDA_EXTENSION_SUFFIX = "_cuda"  # top-level modules named so are compiled CUDA extensions


class UnsupportedTable:
    def __init__(self, raw: dict[str, Any], libraries: LibraryTable) -> None:
        self.raw = raw
        self.libraries = libraries
        self.categories: dict[str, str] = raw["categories"]
        d = raw["cuda_default"]
        self.cuda_default = Entry("torch.cuda", d["category"], d["action"], d["tip"], prefix=True)
        self.apis = {
            e["api"]: Entry(
                e["api"],
                e["category"],
                e["action"],
                e["tip"],
                prefix=e.get("match") == "prefix",
                when=e.get("when"),
            )
            for e in raw["apis"]
        }
        self.env = {
            e["name"]: Entry(
                e["name"], "environment", e["action"], e["tip"], prefix=e.get("match") == "prefix"
            )
            for e in raw["environment"]
        }
        self.modules = {
            e["module"]: Entry(
                e["module"],
                "third_party",
                e.get("action", ""),
                e.get("tip", ""),
                prefix=True,
                supported=e.get("supported", False),
            )
            for e in libraries.module_rows
        }
        ops = raw["torch_ops"]
        self.builtin_op_namespaces = frozenset(ops["builtin_namespaces"])
        self.torch_ops = Entry("torch.ops", ops["category"], ops["action"], ops["tip"], prefix=True)
        self.when_leaves = frozenset(k.rsplit(".", 1)[-1] for k, e in self.apis.items() if e.when)
        keys = [k for k, e in self.apis.items() if e.when is None]
        self.interesting = frozenset(k.rsplit(".", 1)[-1] for k in keys) | {"ops"}
        self.module_roots = frozenset(m.split(".")[0] for m in self.modules)
        self._load_fixed_entries(raw)

    def _load_fixed_entries(self, raw: dict[str, Any]) -> None:
        """The entries that are not looked up by API name: files, strings, attributes."""
        self.cuda_file_suffixes = tuple(raw["cuda_file_suffixes"])
        private = raw["private_attributes"]
        self.private_attributes = {
            name: Entry(name, private["category"], private["action"], private["tip"])
            for name in private["names"]
        }
        # cpp_extension keywords that make a build a CUDA one (unless given False/None)
        self.cuda_build_keywords = frozenset(raw["cuda_build_keywords"])
        # keywords that only pass nvcc flags: the (literal) sources decide
        flags = raw["cuda_flag_keywords"]
        self.cuda_flag_keywords = frozenset(flags["names"])
        self.cpp_suffixes = tuple(flags["cpp_suffixes"])
        self.cpp_only_build = Entry(
            "cpp_extension.load", flags["category"], flags["action"], flags["tip"]
        )
        self.cuda_file = Entry(
            "cuda source file", "custom_cuda_code", "manual", raw["cuda_file_tip"]
        )
        # import selective_scan_cuda: a compiled extension, named by convention
        self.cuda_extension = Entry(
            "cuda extension", "custom_cuda_code", "manual", raw["cuda_extension_tip"], prefix=True
        )
        # import xentropy_cuda_lib, from pkg import _C: a CUDA extension the project builds
        self.project_extension_tip: str = raw["project_extension_tip"]
        files = raw["files"]
        self.skipped_file = Entry("(whole file)", "skipped_file", "manual", files["skipped_tip"])
        # a file whose syntax only a newer Python reads: the same row, with the tip of that case
        tip = files["newer_python_tip"]
        self.newer_python_file = Entry("(whole file)", "skipped_file", "manual", tip)
        self.failed_file = Entry("(whole file)", "failed_file", "manual", files["failed_tip"])
        self.bidi_control = Entry("bidi control character", "review", "manual", files["bidi_tip"])
        self.unmodelled = Entry("(statement)", "unmodelled_code", "manual", files["unmodelled_tip"])
        dyn = raw["dynamic_device"]
        self.dynamic_device = Entry("device string", dyn["category"], dyn["action"], dyn["tip"])
        launch = raw["launch_config"]
        self.launch_config = Entry("launch", launch["category"], launch["action"], launch["tip"])

    # -- cheap pre-checks on the identifiers of an expression, before resolving its name ------
    def may_name_api(self, names: Sequence[str], bound: str | None) -> bool:
        """Whether a dotted expression (its identifiers, last first, and what an import binds
        its root to) can name an API of the table: it must hold the leaf of one."""
        if self.interesting.intersection(names):
            return True
        return bool(bound) and bool(self.interesting.intersection(bound.split(".")))  # type: ignore[union-attr]

    def may_call_module(self, names: Sequence[str], bound: str) -> bool:
        """Whether a call (its function's identifiers, last first) can be one to report:
        ``load``/``load_inline`` of cpp_extension, or a call into a listed library."""
        if names[0] in self.when_leaves:  # load(...), is_autocast_enabled(): checked at calls
            return True
        if bound and self.module(bound.split(".")[0]) is not None:
            return True
        if self.module(bound) is not None:
            return True
        if bound and len(names) > 1:  # pl.Trainer: a listed part below an imported module
            rest = ".".join(reversed(names[:-1]))
            if self.module(f"{bound}.{rest}") is not None:
                return True
        # a dotted name can only be a module's if it starts with a module's first part
        return names[-1] in self.module_roots and self.module(".".join(reversed(names))) is not None

    def env_name(self, body: str | None) -> Entry | None:
        """The entry of a string literal that names a CUDA/NCCL environment variable."""
        if not body or not ENV_NAME.match(body):
            return None
        return self.environment(body)

    def env_assignments(self, text: str) -> list[tuple[str, Entry]]:
        """The CUDA/NCCL variables a command line in a string sets (``"CUDA_VISIBLE_DEVICES=0
        python train.py"``), each with its entry."""
        if "=" not in text or not is_command_line(text):
            return []
        return self.assigned_variables(text)

    def assigned_variables(self, text: str) -> list[tuple[str, Entry]]:
        """The CUDA/NCCL variables ``NAME=`` assignments in ``text`` set, with their entries
        (every line of a shell script is a command line)."""
        found = []
        for name in ENV_ASSIGNMENT.findall(text):
            entry = self.environment(name)
            if entry is not None:
                found.append((name, entry))
        return found

    def api(self, qualified: str) -> Entry | None:
        return _longest(self.apis, qualified)

    def reported_api(self, qualified: str) -> Entry | None:
        """The row for a use of a resolved non-``torch.cuda`` name, if the table lists it
        unconditionally (entries with a ``when`` are checked at their calls; action ``none``:
        a name under a reported prefix that acts on nothing, such as an enum or a query)."""
        if not qualified or qualified.startswith("torch.cuda"):
            return None
        entry = self.api(qualified) or self.torch_op(qualified)
        if entry is None or entry.when is not None or entry.action == NO_ROW:
            return None
        return entry

    def no_row(self, qualified: str | None) -> bool:
        """Listed to be no row (action ``none``): neither the name nor a prefix of it is one."""
        entry = self.api(qualified) if qualified else None
        return entry is not None and entry.action == NO_ROW

    def cuda(self, qualified: str) -> Entry:
        """The entry for a torch.cuda name the NPU lacks (a specific tip, else the default)."""
        return self.api(qualified) or self.cuda_default

    def environment(self, value: str) -> Entry | None:
        return _longest(self.env, value, dotted=False)

    def module(self, dotted: str) -> Entry | None:
        entry = _longest(self.modules, dotted)
        if entry is None and dotted.split(".", 1)[0].endswith(CUDA_EXTENSION_SUFFIX):
            return self.cuda_extension
        return None if entry is None or entry.supported else entry

    def project_extension(self, name: str, where: str) -> Entry:
        """The entry of an import of ``name``, a CUDA extension the project builds at ``where``
        (``setup.py:12``)."""
        tip = self.project_extension_tip.replace("{where}", where)
        return dataclasses.replace(self.cuda_extension, key=name, tip=tip)

    def torch_op(self, qualified: str) -> Entry | None:
        parts = qualified.split(".")
        if len(parts) >= 3 and parts[:2] == ["torch", "ops"]:
            if parts[2] not in self.builtin_op_namespaces:
                return self.torch_ops
        return None
