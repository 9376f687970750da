"""What a pass records about one file, whichever tree it walks (``ast`` spans or LibCST nodes):
the change events, the notices (rows of the unsupported report), the lines inserted, and which
nodes a concern has claimed. No LibCST here: the span pass must not pay for importing it."""

from __future__ import annotations

from typing import NamedTuple

from ms_fmk_transplt.engine.options import DEFAULT_OPTIONS, EngineOptions
from ms_fmk_transplt.events import ChangeEvent, Notice, Operation, Severity
from ms_fmk_transplt.rule_catalog import OPEN_WORK, declare, is_caveat
from ms_fmk_transplt.tables import Tables
from ms_fmk_transplt.tables.unsupported_table import Entry

SNIPPET_MAX = 120

NO_NPU_COUNTERPART = declare(
    "device_api.no_npu_counterpart",
    "a `torch.cuda.X` the target's `torch.npu` lacks: left unchanged, one row",
    "torch_npu has no counterpart for some `torch.cuda` names (`nvtx`, `jiterator`, "
    "`get_arch_list`, ...; category `cuda_only_api`), and some exist only from a later torch_npu "
    "than the `-v` target (category `version_gap`, whose tip names the first version that has "
    "it). Rewriting them would fail with AttributeError on the NPU, so the code is left as it is "
    "and the row's tip says what to do instead.",
    kind=OPEN_WORK,
)
_ROW = "Rows of this category are open work in unsupported_op.xlsx / .csv (action and tip per API)."
# Rows of the unsupported-API table (rules/unsupported_api.json) carry the rule of their category.
CATEGORY_RULES = {
    "cuda_only_api": declare(
        "unsupported.cuda_only_api",
        "a CUDA-only PyTorch API with no NPU counterpart: left unchanged, one row",
        "PyTorch APIs outside `torch.cuda` that exist only for NVIDIA GPUs (`torch.version.cuda`, "
        "...) are left in place and listed, with a tip naming the NPU replacement where there is "
        "one. (`torch.cuda.X` names torch_npu lacks are rows of device_api.no_npu_counterpart.) "
        + _ROW,
        kind=OPEN_WORK,
    ),
    "backend_switch": declare(
        "unsupported.backend_switch",
        "a cuDNN / CUDA backend switch (`torch.backends.cudnn.benchmark`, `allow_tf32`, ...)",
        "Switches of `torch.backends.cudnn` and `torch.backends.cuda` do nothing on the NPU (there "
        "is no cuDNN). Most are harmless and reported as caveats; the tip names the Ascend "
        "counterpart (AOE operator tuning, HF32 settings) where one exists. " + _ROW,
        kind=OPEN_WORK,
    ),
    "environment": declare(
        "unsupported.environment",
        "a CUDA / NCCL environment variable without an exact Ascend counterpart",
        "Variables such as `CUDA_LAUNCH_BLOCKING`, `NCCL_DEBUG` or `CUDA_DEVICE_ORDER` are read by "
        "CUDA or NCCL only; on the NPU they have no effect. The tip names the Ascend variable "
        "with a similar role where there is one (variables with an exact counterpart are "
        "rewritten by environment.ascend_variable). " + _ROW,
        kind=OPEN_WORK,
    ),
    "custom_cuda_code": declare(
        "unsupported.custom_cuda_code",
        "custom CUDA code: `cpp_extension` builds, `load_inline`, Triton/CuPy kernels, `.cu` files",
        "Hand-written CUDA kernels cannot run on an Ascend NPU; they must be replaced by an "
        "existing torch / torch_npu operator or ported to Ascend C. Each build call and each CUDA "
        "source file of the input is listed. " + _ROW,
        kind=OPEN_WORK,
    ),
    "third_party": declare(
        "unsupported.third_party",
        "a CUDA-only third-party library (`apex` kernels, `flash_attn`, `xformers`, `bitsandbytes`,"
        " ...)",
        "Imports and uses of libraries that ship CUDA binaries fail on an NPU host. The tip names "
        "the torch_npu replacement where there is one (`torch_npu.npu_fusion_attention` for flash "
        "attention, fused optimizers for apex); `-sim` replaces some of them automatically. "
        + _ROW,
        kind=OPEN_WORK,
    ),
    "data_parallel": declare(
        "unsupported.data_parallel",
        "`torch.nn.DataParallel`: not supported on the NPU",
        "DataParallel (one process driving several devices) is not supported by torch_npu; use "
        "DistributedDataParallel with one process per NPU, which `ms_fmk_transplt ... distributed "
        "-m MAIN` sets up for a single-card script. " + _ROW,
        kind=OPEN_WORK,
    ),
    "launch_config": declare(
        "unsupported.launch_config",
        "a launch script, config file or command line that passes `cuda` / `nccl` to the code",
        "The migrated code runs on `npu` with `hccl`, but the values it is given from "
        "outside still say `cuda` / `nccl`: a shell script's `--dist-backend nccl` or "
        "`CUDA_VISIBLE_DEVICES=0`, a YAML/JSON/TOML config's `device: cuda`, a command "
        'line in a Python string (`"torchrun train.py --backend nccl"`). They override the '
        "migrated defaults, so the run would ask for CUDA again. Nothing in these files is "
        "rewritten (their values may be choices of the program, or read by other tools): "
        "each file gets one row listing the lines, each command string one row. "
        "(`device=cuda` / `--device=cuda` words of a Python command string are migrated by "
        "device_strings.literal.) " + _ROW,
        kind=OPEN_WORK,
    ),
    "dynamic_device": declare(
        "unsupported.dynamic_device",
        "a device expression the engine cannot rewrite safely (built at run time)",
        'A device argument built at run time whose text still names cuda (`x.to(f"cuda{idx}")`, '
        '`device="cuda:" + kind + ":0"`) would still select CUDA on the NPU, and rewriting it '
        "piecewise is not safe. It is left unchanged and listed: make it produce `npu`. " + _ROW,
        kind=OPEN_WORK,
    ),
}


def category_rule(category: str) -> str:
    """The rule id of an unsupported-API row of this category."""
    return CATEGORY_RULES[category]


class RecordMark(NamedTuple):
    """How much a Recorder held at a savepoint (see Recorder.savepoint)."""

    events: int
    notices: int
    line_inserts: int
    insert_order: int
    helper_lines: int
    needs_torch_npu: bool


_UNCLAIMED = "\0unclaimed"  # a claim's previous state in the journal: no claim


def snippet_of(code: str) -> str:
    """One-line, bounded rendering of code for the Before/After columns."""
    text = " ".join(code.split())
    return text if len(text) <= SNIPPET_MAX else text[: SNIPPET_MAX - 1] + "…"


def shift_line(line: int, inserts: list[tuple[int, int]]) -> int:
    """Line number in the migrated file of an input line, given the inserted lines
    (``Recorder.line_inserts``)."""
    if len(inserts) == 1:
        first, count = inserts[0]
        return line + count if line >= first else line
    return line + sum(count for first, count in inserts if line >= first)


class Recorder:
    """Events, notices, inserted lines and claims of one pass over one file."""

    def __init__(self, path: str, tables: Tables, options: EngineOptions | None = None) -> None:
        self.path = path
        self.tables = tables
        self.options = options or DEFAULT_OPTIONS
        self.events: list[ChangeEvent] = []
        self.notices: list[Notice] = []
        # (first input line that moves down, number of lines inserted above it)
        self.line_inserts: list[tuple[int, int]] = []
        self.insert_order: list[tuple[int, int, int]] = []
        self.needs_torch_npu = False
        # (code, rule, message) lines to insert right after ``import torch_npu`` (e.g. -s helper)
        self.helper_lines: list[tuple[str, str, str]] = []
        self._claims: dict[int, str | None] = {}
        # since the last savepoint: (node id, its claim before), to undo the claims made
        self._claim_log: list[tuple[int, str | None]] = []

    # -- savepoints ---------------------------------------------------------------------------
    def savepoint(self) -> RecordMark:
        """What has been recorded so far: ``rollback`` undoes everything recorded after it
        (one savepoint at a time: the claims journal restarts here)."""
        self._claim_log.clear()
        return RecordMark(
            len(self.events),
            len(self.notices),
            len(self.line_inserts),
            len(self.insert_order),
            len(self.helper_lines),
            self.needs_torch_npu,
        )

    def rollback(self, mark: RecordMark) -> None:
        """Forget the events, notices, inserted lines and claims recorded since ``mark``."""
        del self.events[mark.events :]
        del self.notices[mark.notices :]
        del self.line_inserts[mark.line_inserts :]
        del self.insert_order[mark.insert_order :]
        del self.helper_lines[mark.helper_lines :]
        self.needs_torch_npu = mark.needs_torch_npu
        for key, before in reversed(self._claim_log):
            if before == _UNCLAIMED:
                self._claims.pop(key, None)
            else:
                self._claims[key] = before
        self._claim_log.clear()

    # -- claims ------------------------------------------------------------------------------
    def claim(self, node: object, rule: str | None = None) -> None:
        """A concern takes ``node`` over.

        Without ``rule`` the claim is exclusive: every other concern leaves the node alone
        (it is rewritten by the claimant, or deliberately kept, like the keys of
        ``map_location={"cuda:0": ...}``). With ``rule`` the node keeps its normal rewrite but
        the change is recorded under ``rule`` (amp claims the ``"cuda"`` of
        ``autocast("cuda")`` so that the change list names the AMP rule).
        """
        key = id(node)
        if rule is not None and key in self._claims and self._claims[key] is None:
            return  # an exclusive claim stands
        self._claim_log.append((key, self._claims.get(key, _UNCLAIMED)))
        self._claims[key] = rule

    def forget_claims(self) -> None:
        self._claims.clear()
        self._claim_log.clear()

    def is_claimed(self, node: object) -> bool:
        """Whether a concern holds an exclusive claim on ``node``."""
        key = id(node)
        return key in self._claims and self._claims[key] is None

    def rule_for(self, node: object, default: str) -> str:
        """The rule a change of ``node`` is recorded under (see ``claim``)."""
        return self._claims.get(id(node)) or default

    # -- recording ---------------------------------------------------------------------------
    def record_lines(
        self,
        start: int,
        end: int,
        rule: str,
        message: str,
        before: str,
        after: str,
        operation: Operation = Operation.MODIFY,
        needs_torch_npu: bool = True,
    ) -> None:
        self.events.append(
            ChangeEvent(
                file=self.path,
                start_line=start,
                end_line=end,
                rule=rule,
                operation=operation,
                message=message,
                before=before,
                after=after,
                caveat=is_caveat(rule),
            )
        )
        self.needs_torch_npu = self.needs_torch_npu or needs_torch_npu

    def record_insert(
        self, anchor: int, rule: str, message: str, text: str, first: bool = False
    ) -> None:
        """Lines inserted right before input line ``anchor`` (after any earlier inserts at the
        same anchor). Output line numbers are worked out once the pass is over."""
        self.events.append(
            ChangeEvent(
                file=self.path,
                start_line=anchor,
                end_line=anchor,
                rule=rule,
                operation=Operation.INSERT,
                message=message,
                before="",
                after=text,
                caveat=is_caveat(rule),
            )
        )
        self.line_inserts.append((anchor, text.count("\n") + 1))
        # physical order among inserts at the same anchor: `first` ones (the import block)
        # precede the others; otherwise the order of recording
        self.insert_order.append((anchor, 0 if first else 1, len(self.insert_order)))

    def warn_at(
        self,
        line: int,
        rule: str,
        message: str,
        api: str = "",
        severity: Severity = Severity.WARNING,
    ) -> None:
        self.notices.append(Notice(self.path, line, rule, severity, message, api))

    def unsupported_at(
        self,
        lines: tuple[int, int],
        api: str,
        entry: Entry,
        message: str | None = None,
        rule: str | None = None,
    ) -> None:
        """Record a construct that cannot run on the NPU as is (a row of unsupported_op.xlsx)."""
        start, end = lines
        table = self.tables.unsupported
        self.notices.append(
            Notice(
                self.path,
                start,
                rule or category_rule(entry.category),
                Severity.WARNING,
                message or f"{api}: {table.categories[entry.category]}; left unchanged",
                api=api,
                category=entry.category,
                action=entry.action,
                tip=entry.tip,
                end_line=end,
            )
        )

    def no_npu_counterpart_at(self, lines: tuple[int, int], full: str, what: str = "left") -> None:
        """A torch.cuda name torch_npu lacks: left as it is, with the table's tip."""
        entry = self.tables.cuda_entry(full)
        where = (
            f"torch_npu {self.tables.torch_npu_version}'s torch.npu (the -v target)"
            if entry.category == "version_gap"
            else "torch_npu's torch.npu"
        )
        message = f"{full} has no counterpart in {where}; {what} unchanged"
        self.unsupported_at(lines, full, entry, message, rule=NO_NPU_COUNTERPART)
