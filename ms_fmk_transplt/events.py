"""Structured records of what the engine did to one file.

The engine only produces these; reports are written from them and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

ADVICE = "advice"  # the action of advice rows (engine/rules/advice/advice_rows.py)
CELL = "#cell"  # a notebook's cell in an event's or notice's file: ``nb.ipynb#cell3``


def cell_location(notebook: str, index: int) -> str:
    """The ``file`` of an event or notice in cell ``index`` (from 0) of ``notebook``."""
    return f"{notebook}{CELL}{index}"


def split_cell(location: str) -> tuple[str, int | None]:
    """``nb.ipynb#cell3`` -> (``nb.ipynb``, 3); any other location -> (itself, None): only a
    notebook's location names a cell (a ``#`` in a file's or folder's name is part of it)."""
    file, found, index = location.rpartition(CELL)
    if found and file.endswith(".ipynb") and index.isascii() and index.isdigit():
        return file, int(index)
    return location, None


class Operation(str, Enum):
    INSERT = "INSERT"
    MODIFY = "MODIFY"
    DELETE = "DELETE"


class Severity(str, Enum):
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"


@dataclass(frozen=True)
class ChangeEvent:
    """One change made to a file.

    ``start_line``/``end_line`` are lines of the input file; ``out_start_line``/``out_end_line`` are
    the lines the changed text occupies in the migrated file (they differ once a line was inserted
    above, e.g. ``import torch_npu``).
    """

    file: str
    start_line: int
    end_line: int
    rule: str
    operation: Operation
    message: str
    before: str
    after: str
    out_start_line: int = 0
    out_end_line: int = 0
    caveat: bool = False  # the rule's changes run but can behave differently (rule_catalog.py)


class TableEntry(Protocol):
    """A row of the unsupported table (``Entry`` of tables/unsupported_table.py), as read here."""

    @property
    def key(self) -> str: ...
    @property
    def category(self) -> str: ...
    @property
    def action(self) -> str: ...
    @property
    def tip(self) -> str: ...


@dataclass(frozen=True)
class Notice:
    """Something the engine saw and deliberately did not change (or could not process).

    Notices with a ``category`` are open work for the user: they are the rows of
    unsupported_op.xlsx. ``action`` is "manual" (needs work) or "caveat" (runs, but differs);
    "advice" rows (optional NPU performance/precision work) have a sheet and a csv of their own.
    """

    file: str
    line: int
    rule: str
    severity: Severity
    message: str
    api: str = ""
    category: str = ""
    action: str = ""
    tip: str = ""
    end_line: int = 0
    # lines in the migrated file (differ from the input's once a line was inserted above)
    out_line: int = 0
    out_end_line: int = 0

    @classmethod
    def of_entry(
        cls,
        where: tuple[str, int],
        rule: str,
        severity: Severity,
        message: str,
        entry: TableEntry,
        api: str | None = None,
        end_line: int = 0,
    ) -> Notice:
        """A notice at ``where`` (file, line) with the category, action and tip of a table row,
        and its API unless ``api`` names another."""
        return cls(
            where[0],
            where[1],
            rule,
            severity,
            message,
            api=entry.key if api is None else api,
            category=entry.category,
            action=entry.action,
            tip=entry.tip,
            end_line=end_line,
        )

    @property
    def open_work(self) -> bool:
        """A row of unsupported_op.xlsx: work for the user (manual) or a caveat to check."""
        return bool(self.category) and self.action != ADVICE

    @property
    def advice(self) -> bool:
        """A row of the advice sheet and advice.csv: optional NPU performance/precision work."""
        return self.action == ADVICE

    def lines(self, migrated: bool) -> tuple[int, int]:
        """(start, end) in the migrated file, or in the input file."""
        if migrated and self.out_line:
            start, end = self.out_line, self.out_end_line
        else:
            start, end = self.line, self.end_line
        return start, max(start, end)


class FileStatus(str, Enum):
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    SKIPPED = "skipped"  # could not be parsed: copied unchanged
    FAILED = "failed"  # the engine crashed on it: copied unchanged


@dataclass
class FileResult:
    path: str
    status: FileStatus
    output: bytes
    events: list[ChangeEvent] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    analysed: bool = True  # False when the cheap pre-filter decided no rule can apply
    # seconds spent per phase ("prefilter", "analyse", "rewrite"; see engine/migrate.py)
    timings: dict[str, float] = field(default_factory=dict)
    libcst_stages: str = ""  # the LibCST stages of the options run on it ("user_rules,similar")
    framework: str = ""  # "tensorflow" for a file that imports TensorFlow ("": PyTorch or none)
