"""What the span pass or a LibCST stage records about one file (``ast`` spans or LibCST nodes):
the change events, the notices (rows of the unsupported report), the lines inserted, and which
nodes a concern has claimed. The one recording API of both: each context (the span pass's
SpanContext, the LibCST stages' MigrationContext) inherits it and only says which input lines
one of its nodes spans (``lines``). No LibCST here: the span pass must not pay for importing
it."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ms_fmk_transplt.catalogue.rule_catalog import is_caveat
from ms_fmk_transplt.engine.options import DEFAULT_OPTIONS, EngineOptions
from ms_fmk_transplt.events import ChangeEvent, Notice, Operation, Severity
from ms_fmk_transplt.tables import Tables
from ms_fmk_transplt.tables.library_table import LibraryTable
from ms_fmk_transplt.tables.unsupported_table import Entry

SNIPPET_MAX = 120
Lines = tuple[int, int]  # the first and last input line of what a row is about


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


def _no_rule(api: str, entry: Entry, libraries: LibraryTable) -> str:
    raise LookupError("a recorder needs the families' open_work_rule (engine/rules/registry.py)")


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
        self.open_work_rule: Callable[[str, Entry, LibraryTable], str] = _no_rule
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
    # The one recording API of the span pass and the LibCST stages: a row is recorded at input
    # lines ``(first, last)``; each context gives the lines of its own nodes (``ctx.lines``).
    def record(
        self,
        lines: Lines,
        rule: str,
        message: str,
        before: str,
        after: str,
        operation: Operation = Operation.MODIFY,
        needs_torch_npu: bool = True,
    ) -> None:
        """A change of ``lines`` (a change_list.csv row)."""
        start, end = lines
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

    def warn(
        self,
        lines: Lines,
        rule: str,
        message: str,
        api: str = "",
        severity: Severity = Severity.WARNING,
    ) -> None:
        """A notice at the first of ``lines`` (a line of the log, or a row its rule's kind
        says)."""
        self.notices.append(Notice(self.path, lines[0], rule, severity, message, api))

    def _rule_of(self, api: str, entry: Entry) -> str:
        # the families' choice (Family.open_work_rule: a category's row, a library's use),
        # handed in by the pass that made this context
        return self.open_work_rule(api, entry, self.tables.unsupported.libraries)

    def unsupported(
        self,
        lines: Lines,
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
                rule or self._rule_of(api, entry),
                Severity.WARNING,
                message or f"{api}: {table.categories[entry.category]}; left unchanged",
                api=api,
                category=entry.category,
                action=entry.action,
                tip=entry.tip,
                end_line=end,
            )
        )
