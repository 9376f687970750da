"""What a pass records about one file, whichever tree it walks (``ast`` spans or LibCST nodes):
the change events, the notices (rows of the unsupported report), the lines inserted, and which
nodes a concern has claimed. No LibCST here: the span pass must not pay for importing it."""

from __future__ import annotations

from ms_fmk_transplt.engine.options import DEFAULT_OPTIONS, EngineOptions
from ms_fmk_transplt.events import ChangeEvent, Notice, Operation, Severity
from ms_fmk_transplt.tables import Tables
from ms_fmk_transplt.unsupported_table import Entry

SNIPPET_MAX = 120


def snippet_of(code: str) -> str:
    """One-line, bounded rendering of code for the Before/After columns."""
    text = " ".join(code.split())
    return text if len(text) <= SNIPPET_MAX else text[: SNIPPET_MAX - 1] + "…"


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
        self._claims[key] = rule

    def forget_claims(self) -> None:
        self._claims.clear()

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
            )
        )
        self.line_inserts.append((anchor, text.count("\n") + 1))
        # physical order among inserts at the same anchor: `first` ones (the import block)
        # precede the others; otherwise the order of recording
        self.insert_order.append((anchor, 0 if first else 1, len(self.insert_order)))

    def warn_at(
        self, line: int, rule: str, message: str, api: str = "", severity=Severity.WARNING
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
                rule or table.rule,
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
        self.unsupported_at(lines, full, entry, message, rule=self.tables.cuda_unsupported_rule)
