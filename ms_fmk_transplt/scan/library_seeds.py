"""The CUDA-specific lines of a library's module, as the engine's own rules find them (the
module migrated in analysis mode, nothing written): each change the migration would make (a
``.cuda()``, a ``torch.cuda.*`` call, a ``"cuda"`` device, ``nccl``) and each open-work row of
CUDA-only code (custom CUDA operators and extensions, CUDA-only APIs and libraries, operators
the target torch_npu does not support). rules/deps_analysis.json says which torch.cuda calls do
not fail without CUDA: the probes ("is there CUDA?", the caller's test), the calls that do
nothing, and those that switch themselves off (a "cpu" seed: the library runs, without the
feature). A ``"cuda"`` string in a module's own code (a default, a list of choices) is a use
only when code runs with it, so the module's strings are not seeds."""

from __future__ import annotations

import dataclasses
import re

from ms_fmk_transplt.catalogue.rule_catalog import is_bookkeeping
from ms_fmk_transplt.events import FileResult
from ms_fmk_transplt.scan.library_graph import Seed
from ms_fmk_transplt.tables.deps_table import DepsTable

# open-work categories (rules/unsupported_api.json) of code that needs CUDA
CUDA_CATEGORIES = frozenset({"cuda_only_api", "custom_cuda_code", "unsupported_op"})
_LIBRARY_CATEGORY = "third_party"  # a CUDA-only library when its action is manual
_UNSUPPORTED = "unsupported_op"
_NOT_ON_NPU = "an operator the target torch_npu does not support"
_QUOTES = ("'", '"')
_F_QUOTES = ("f'", 'f"', "b'", 'b"', "r'", 'r"')
# a device or backend string: "cuda", "cuda:0", f"cuda:{rank}", "nccl"
_DEVICE_STRING = re.compile(r"""[fbr]?["'](?:cuda(?::|["'])|nccl["'])""", re.I)
_CODE = re.compile(r"[\w.]+(?:\(.*\))?", re.S)  # a name, a call
_SHOWN = 70  # characters of the code shown in a path


def result_seeds(result: FileResult, table: DepsTable, package: str) -> list[Seed]:
    """The seeds of a module of ``package`` from the engine's result on it (lines of the
    input); the rows the library table gives for the package itself are not its own use."""
    seeds: list[Seed] = []
    for event in result.events:
        if not is_bookkeeping(event.rule):
            seeds.extend(_seed(event.before, event.start_line, table))
    for notice in result.notices:
        manual_library = notice.category == _LIBRARY_CATEGORY and notice.action == "manual"
        own = notice.api.split(".", 1)[0] == package
        if (notice.category in CUDA_CATEGORIES or manual_library) and not own:
            found = _seed(notice.api or notice.message, notice.line, table)
            if notice.category == _UNSUPPORTED:  # (no CUDA in it: the NPU lacks it)
                found = [dataclasses.replace(s, what=f"{s.what} ({_NOT_ON_NPU})") for s in found]
            seeds.extend(found)
    return seeds


def _seed(text: str, line: int, table: DepsTable) -> list[Seed]:
    """The seed of a CUDA-specific piece of code (none: not a CUDA use)."""
    code = " ".join(text.split())
    api = code[:-2] if code.endswith("()") else code
    if api in table.probes or api in table.no_ops or api.startswith(table.no_op_prefixes):
        return []
    if code[:1] in _QUOTES or code[:2] in _F_QUOTES:
        if not _DEVICE_STRING.match(code):
            return []  # an environment variable's name: no CUDA use
    elif not _CODE.fullmatch(code):
        return []  # the text of a CUDA error the code matches
    if api in table.disabled:
        return [Seed(line, "cpu", f"{api}: {table.disabled[api]}")]
    return [Seed(line, "cuda", _short(code))] if code else []


def _short(code: str) -> str:
    return code if len(code) <= _SHOWN else code[: _SHOWN - 3] + "..."
