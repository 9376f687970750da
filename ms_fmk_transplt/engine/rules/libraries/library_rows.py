"""One row per file and library (rules ``libraries.cuda_only`` and ``libraries.npu_path``).

The span pass records each use of a listed library where it sees it (an import, a call, an
argument: engine/rules/unsupported/ and library_argument_spans.py); a file that imports
xformers and calls it fourteen times would get fourteen rows saying the same thing. Here the rows
of one library in one file become one row: at its first use, listing every line, with each
distinct tip once, a ``manual`` action when any use needs work, and, for a library with an
Ascend path, the package and version that brings it.
The uses of an entry marked ``per_run`` (the action is in the library: coqui's trainer) are a row
of their own, whose API is such an entry's, so that the run can fold it across files
(library_run_folds.py).
A library whose name is one of the project's own top-level modules or packages is none: the rows
go (gpt-neox's own ``megatron/`` is not Megatron-LM; the project's facts say which names it holds,
engine/rules/cuda_only/project_facts.py).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from typing import TypeVar

from ms_fmk_transplt.catalogue.rule_catalog import NOTICE, OPEN_WORK, declare
from ms_fmk_transplt.engine.project_facts import ProjectFacts, ascend_kernel_source
from ms_fmk_transplt.engine.rules.family_spec import Folding
from ms_fmk_transplt.engine.rules.libraries.option_choices import option_choices
from ms_fmk_transplt.engine.rules.libraries.type_only_imports import (
    import_statements,
    type_only_imports,
)
from ms_fmk_transplt.events import Notice, Severity
from ms_fmk_transplt.tables.library_table import Library, LibraryTable

_ROW = (
    " One row per file and library: at the first use, listing the lines of every use, with "
    "the tip of each API once. The table (rules/libraries.json) names the public source and "
    "the version each fact was read at."
)
CUDA_ONLY = declare(
    "libraries.cuda_only",
    "a CUDA-only third-party library, or a CUDA-only part of one (`flash_attn`, `xformers`, "
    '`bitsandbytes`, `attn_implementation="flash_attention_2"`, DeepSpeed\'s transformer kernels)',
    "Imports and uses of libraries that ship CUDA binaries fail on an NPU host, and so do the "
    "arguments of device-neutral libraries that select a CUDA-only path (`load_in_4bit=True`, "
    '`attn_implementation="flash_attention_2"`, `TrainingArguments(tf32=True)`, Lightning\'s '
    "`Trainer(gpus=N)`). Nothing is rewritten; the tip names the nearest torch / torch_npu "
    "replacement (`torch_npu.npu_fusion_attention` for flash attention, bf16 LoRA for "
    "k-bit training); `-sim` replaces some of them automatically. A recipe file naming one "
    "(`optim: paged_adamw_8bit`, torchtune's `_component_: bitsandbytes.optim.PagedAdamW8bit`, "
    "`attn_implementation: kernels-community/vllm-flash-attn3`; in a JSON file a key of its "
    "top-level object) gets one row per file (library_configs.py; the same setting in three "
    "or more recipe files: one row for the run, the log listing them), and so does a dict display "
    'of Python code holding such a setting (`{"optimizer": "adamw_bnb_8bit"}`, '
    '`model_init_kwargs={"attn_implementation": "kernels-community/flash-attn2"}`). A library '
    "that picks CUDA in its own code (`per_run` in the table: coqui's `trainer.TrainerArgs`, "
    "basicsr's models) is work on the library, done once: its uses are a row apart in each "
    "file, and in three or more files one row for the run, in the first file by path, naming "
    "how many files use it (the log lists them all: library_run_folds.py)." + _ROW,
    kind=OPEN_WORK,
)
NPU_PATH = declare(
    "libraries.npu_path",
    "a library that runs on the NPU through its Ascend path (transformers' Trainer, accelerate, "
    "DeepSpeed, vLLM, Megatron): the package and the version that brings it",
    "Libraries such as transformers, accelerate and DeepSpeed detect torch_npu and run on the "
    "NPU from a given version; vLLM needs the vllm-ascend plugin and Megatron-LM MindSpeed. The "
    "row is a caveat naming the package and its minimum version, at the file's first use of "
    "the library's entry point (`Trainer`, `Accelerator`, `deepspeed.initialize`, ...); plain "
    "imports of model classes give no row." + _ROW,
    kind=OPEN_WORK,
    caveat="runs on the NPU with the named package and version installed: check your "
    "environment's version",
)
ASCEND_PATH = declare(
    "libraries.ascend_path",
    "a library that selects the NPU itself, used in a file that has nothing to change about it "
    "(`Trainer`, `TrainingArguments`, `deepspeed.initialize`, vLLM): a line of the log",
    "transformers' Trainer, DeepSpeed's engine and vLLM (with vllm-ascend) detect torch_npu and "
    "run on the NPU; their uses ask nothing of the file when it passes no CUDA-only option "
    '(`tf32=True`, `attn_implementation="flash_attention_3"`, a bitsandbytes optimizer: those '
    "are rows of `libraries.cuda_only` / `libraries.npu_path`, and the library's row then names "
    "its Ascend path too). Such a file gets no row, only this line of the log naming the package "
    "and the first version with the NPU path, so the open-work rows and the rate count work to "
    "do. The entries concerned are marked `no_change` in rules/libraries.json.",
    kind=NOTICE,
)
THIRD_PARTY = "third_party"
K = TypeVar("K")
_MAX_APIS = 6  # API names listed in a row's message before "and N more"
_MAX_LINES = 60  # line numbers listed in the message before "and N more"
_MAX_TIP_LINES = 30  # and before a tip (the csv and the workbook show the tips, not the message)


def row_rule(api: str, action: str, table: LibraryTable) -> str:
    """The rule of one use's row (before folding: what `# msft: ignore[...]` names)."""
    library = table.library_of(api)
    npu_path = library is not None and library.ascend is not None and action == "caveat"
    return NPU_PATH if npu_path else CUDA_ONLY


def fold_library_rows(
    notices: list[Notice],
    table: LibraryTable,
    migrated: bool,
    source: bytes = b"",
    project: ProjectFacts | None = None,
) -> list[Notice]:
    """``notices`` with the rows of each library folded into one row per library; the lines it
    lists are those of the migrated file (``migrated``) or of the input. In a program of
    another framework (``source`` imports jax) the Ascend-path caveats go, and so do the rows
    of a name the ``project`` holds itself (its own ``megatron`` package). The deps family's
    rows (``--deps``) are its own to fold (deps_spans.py): they are left as they are."""
    analysed = [n for n in notices if n.rule.startswith("deps.")]
    if analysed:
        others = [n for n in notices if not n.rule.startswith("deps.")]
        return [*fold_library_rows(others, table, migrated, source, project), *analysed]
    if project is not None and project.own_modules:
        notices = [n for n in notices if not _own(n, project)]
    notices = [n for n in notices if not _ported(n, table, project, source)]
    if any(n.rule == NPU_PATH for n in notices) and table.other_framework.search(source):
        notices = [n for n in notices if n.rule != NPU_PATH]
    notices = _without_type_only(notices, table, source)
    notices = _chosen(notices, table, source)
    # the uses of an entry whose action is in the library (per_run) apart from the file's own
    groups: dict[tuple[str, bool], list[Notice]] = {}
    for n in notices:
        if n.open_work and n.category == THIRD_PARTY:
            library = table.library_of(n.api)
            if library is not None:
                groups.setdefault((library.name, table.per_run(n.api)), []).append(n)

    def row(key: tuple[str, bool], group: list[Notice]) -> Notice:
        folded = _folded(group, table.by_name[key[0]], migrated, _no_change(group, table))
        if key[1] and not table.per_run(folded.api):  # (basicsr.train and basicsr.models)
            return dataclasses.replace(folded, api=group[0].api)  # an API of a per_run entry
        return folded

    return fold_groups(notices, groups.items(), row, single=True)


_LEADING_NAME = re.compile(r"\w+")


def _ported(
    notice: Notice, table: LibraryTable, project: ProjectFacts | None, source: bytes
) -> bool:
    """A row of a kernel language with an Ascend build (Triton) in the project's own kernels
    for the NPU (the file, or its folder: ProjectFacts.ascend_kernel_file): nothing to port."""
    if not (notice.open_work and notice.category == THIRD_PARTY):
        return False
    library = table.library_of(notice.api)
    if library is None or not library.own_ascend_kernels:
        return False
    if project is not None and project.ascend_kernel_file(notice.file):
        return True
    return ascend_kernel_source(source)


def _without_type_only(notices: list[Notice], table: LibraryTable, source: bytes) -> list[Notice]:
    """``notices`` without the rows of imports that run nothing on the device
    (type_only_imports.py): under ``TYPE_CHECKING``, or used only as types and guarded or of a
    library that imports on any host."""
    rows = [n for n in notices if n.open_work and n.category == THIRD_PARTY]
    roots = frozenset(n.api.split(".", 1)[0] for n in rows if table.library_of(n.api))
    if not roots or not source:
        return notices
    found = type_only_imports(source, roots, frozenset(n.line for n in rows))
    if not found:
        return notices
    gone: set[int] = set()
    for n in rows:
        library = table.library_of(n.api)
        for (name, first, last), safe in found.items():
            if name == n.api and first <= n.line <= last and library is not None:
                if safe or library.device_neutral or library.ascend is not None:
                    gone.add(id(n))
    return [n for n in notices if id(n) not in gone]


def _own(notice: Notice, project: ProjectFacts) -> bool:
    """A library's row about a module the project holds (``megatron.mpu``, ``megatron.*``,
    ``transformers: attn_implementation=...``: the name the API starts with)."""
    if notice.category != THIRD_PARTY:
        return False
    name = _LEADING_NAME.match(notice.api)
    return name is not None and project.owns(name.group())


def fold_groups(
    notices: list[Notice],
    groups: Iterable[tuple[K, list[Notice]]],
    fold: Callable[[K, list[Notice]], Notice],
    single: bool = False,
    by_line: bool = True,
) -> list[Notice]:
    """``notices`` with each group replaced by ``fold(key, group)`` at its first row (sorted by
    line first unless not ``by_line``); a group of one row is left as it is unless ``single``."""
    firsts: dict[int, Notice] = {}
    dropped: set[int] = set()
    for key, group in groups:
        if len(group) < 2 and not single:
            continue
        if by_line:
            group.sort(key=lambda n: (n.line, n.end_line))
        firsts[id(group[0])] = fold(key, group)
        dropped.update(id(n) for n in group[1:])
    if not firsts:
        return notices
    return [firsts.get(id(n), n) for n in notices if id(n) not in dropped]


def _chosen(notices: list[Notice], table: LibraryTable, source: bytes) -> list[Notice]:
    """``notices`` with the manual rows of a CUDA-only library inside the body of an ``if``
    on the user's options made caveats naming the choice (option_choices.py); so is the import
    of the name when every other use of it in the file is such a choice and the import cannot
    fail (guarded, or a part of a library that imports on any host: ``BitsAndBytesConfig``)."""
    rows = [
        n for n in notices if n.open_work and n.category == THIRD_PARTY and n.action == "manual"
    ]
    rows = [n for n in rows if table.library_of(n.api) is not None]
    choices = option_choices(source, frozenset(n.line for n in rows)) if rows and source else []
    if not choices:
        return notices
    made: dict[int, Notice] = {}
    for n in rows:
        inside = [c for c in choices if c[0] <= n.line <= c[1]]
        if inside:
            made[id(n)] = _choice(n, min(inside, key=lambda c: c[1] - c[0])[2])
    if made:
        _chosen_imports(rows, made, table, source)
    return [made.get(id(n), n) for n in notices]


def _choice(n: Notice, test: str) -> Notice:
    tip = f"used only when the run chooses it (if {test}): on the NPU leave it off; {n.tip}"
    return dataclasses.replace(n, action="caveat", rule=CUDA_ONLY, tip=tip)


def _chosen_imports(
    rows: list[Notice], made: dict[int, Notice], table: LibraryTable, source: bytes
) -> None:
    roots = frozenset(n.api.split(".", 1)[0] for n in rows)
    imports = import_statements(source, roots, frozenset(n.line for n in rows))
    for n in rows:
        library = table.library_of(n.api)
        importable = library is not None and (library.device_neutral or library.ascend is not None)
        at = [safe for (name, a, b), safe in imports.items() if name == n.api and a <= n.line <= b]
        if id(n) in made or not at or not (importable or at[0]):
            continue  # (an unguarded import of a CUDA-only library fails by itself)
        uses = [u for u in rows if u.api == n.api and u is not n]
        if uses and all(id(u) in made for u in uses):
            test = made[id(uses[0])].tip.split("(if ", 1)[1].split("): on the NPU", 1)[0]
            made[id(n)] = _choice(n, test)


def _no_change(group: list[Notice], table: LibraryTable) -> bool:
    """Every use is a caveat of an entry marked ``no_change`` (``Trainer``, ``vllm``): the
    file has nothing to do about the library."""
    return all(n.action == "caveat" and table.asks_no_change(n.api) for n in group)


def _folded(group: list[Notice], library: Library, migrated: bool, no_change: bool) -> Notice:
    if no_change and library.ascend is not None:
        return _ascend_note(group, library, migrated)
    manual = any(n.action == "manual" for n in group)
    cuda_only = manual or any(n.rule == CUDA_ONLY for n in group)  # a chosen use: a caveat
    rule = CUDA_ONLY if cuda_only or library.ascend is None else NPU_PATH
    apis = list(dict.fromkeys(n.api for n in group))
    tips = _tips(group, migrated)
    if library.ascend is not None:
        tips.append(library.ascend.text())
    first = group[0]
    return dataclasses.replace(
        first,
        rule=rule,
        api=_common_prefix(apis),
        action="manual" if manual else "caveat",
        message=f"{library.name}: {_uses(group, apis, migrated)}; {_kind(rule, library)}; "
        "left unchanged",
        tip=" | ".join(tips),
    )


def _ascend_note(group: list[Notice], library: Library, migrated: bool) -> Notice:
    """A line of the log instead of a row: the library runs on the NPU by itself."""
    apis = list(dict.fromkeys(n.api for n in group))
    assert library.ascend is not None
    return dataclasses.replace(
        group[0],
        rule=ASCEND_PATH,
        severity=Severity.INFO,
        api=_common_prefix(apis),
        category="",
        action="",
        tip="",
        message=f"{library.name}: {_uses(group, apis, migrated)}; runs on the NPU by itself, "
        f"nothing to change in this file; {library.ascend.text()}",
    )


def _common_prefix(apis: list[str]) -> str:
    """The dotted prefix the row's APIs share (``xformers.ops`` for its functions), at least
    the module the first one starts with."""
    parts = apis[0].replace(":", ".").split(".")
    for api in apis[1:]:
        other = api.replace(":", ".").split(".")
        n = 0
        while n < min(len(parts), len(other)) and parts[n] == other[n]:
            n += 1
        parts = parts[: max(n, 1)]
    return apis[0] if len(apis) == 1 else ".".join(parts)


def _tips(group: list[Notice], migrated: bool) -> list[str]:
    """Each distinct tip once; with the lines it is about when the uses have several."""
    lines: dict[str, list[int]] = {}
    for n in group:
        line = n.lines(migrated)[0]
        if n.tip and line not in lines.setdefault(n.tip, []):
            lines[n.tip].append(line)
    if len(lines) == 1 and len(next(iter(lines.values()))) == 1:
        return list(lines)  # one use: the row's own line
    return [f"{_where(at, _MAX_TIP_LINES)}: {tip}" for tip, at in lines.items()]


def _where(lines: list[int], most: int = _MAX_LINES) -> str:
    if len(lines) == 1:
        return f"line {lines[0]}"
    more = f" and {len(lines) - most} more" if len(lines) > most else ""
    return "lines " + ", ".join(map(str, lines[:most])) + more


def _kind(rule: str, library: Library) -> str:
    if rule == NPU_PATH:
        return "runs on the NPU with its Ascend path"
    whole = library.ascend is None and not library.device_neutral
    if whole and library.npu_parts:
        return f"CUDA-only except {library.npu_parts}"
    return "CUDA-only" if whole else "a CUDA-only part of it"


def _uses(group: list[Notice], apis: list[str], migrated: bool) -> str:
    where = _where(sorted({n.lines(migrated)[0] for n in group}))
    if len(group) == 1:
        return f"{apis[0]} ({where})"
    shown = ", ".join(apis[:_MAX_APIS])
    more = f" and {len(apis) - _MAX_APIS} more" if len(apis) > _MAX_APIS else ""
    return f"{len(group)} uses in this file ({where}: {shown}{more})"


def fold_rows_per_file(
    notices: list[Notice], rules: frozenset[str], migrated: bool, by_api: bool = False
) -> list[Notice]:
    """``notices`` with the open-work rows of each of ``rules`` folded into one row per file
    (Lightning's ``accelerator="cuda"``, once per call, said the same thing each time);
    ``by_api``: one row per file and API (``hvd.rank`` called 16 times)."""
    groups: dict[object, list[Notice]] = {}
    for n in notices:
        if n.open_work and n.rule in rules:
            groups.setdefault((n.rule, n.api) if by_api else n.rule, []).append(n)
    return fold_groups(notices, groups.items(), lambda _, group: _uses_row(group, migrated))


def _uses_row(group: list[Notice], migrated: bool) -> Notice:
    """The row of a group of uses in one file: the first, naming every line."""
    where = _where(sorted({n.lines(migrated)[0] for n in group}))
    return dataclasses.replace(
        group[0],
        message=f"{len(group)} uses in this file ({where}); {group[0].message}",
        tip="; ".join(_tips(group, migrated)),
    )


def fold_rows_per_api(notices: list[Notice], rules: frozenset[str], migrated: bool) -> list[Notice]:
    """``notices`` with the open-work rows of each of ``rules`` folded into one row per file,
    API and action (a setting counts once per file: ``kl_div(log_target=True)`` in four losses of
    one trainer, ``CUDA_VISIBLE_DEVICES`` in every command of a test): at the first use, the
    lines of every use in its message and tip."""
    groups: dict[tuple[str, str, str], list[Notice]] = {}
    for n in notices:
        if n.open_work and n.rule in rules:
            groups.setdefault((n.rule, n.api, n.action), []).append(n)
    return fold_groups(notices, groups.items(), lambda _, group: _uses_row(group, migrated))


def fold(notices: list[Notice], done: Folding) -> list[Notice]:
    """The family's rows folded (Family.fold): one row per file and library."""
    libraries = done.tables.unsupported.libraries
    return fold_library_rows(notices, libraries, done.migrated, done.source, done.options.project)
