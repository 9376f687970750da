"""The span pass gives a file back to the LibCST pass when it meets code it does not model."""

from __future__ import annotations


class Decline(Exception):
    """Raised inside the span pass: this file goes through the LibCST pass instead (the reason
    is counted by the benchmark; outputs are the same either way, only slower)."""


class Unreadable(Exception):
    """Raised by the span pass for a file Python itself cannot read (it does not decode, or the
    stdlib parser refuses it): copied unchanged and reported with this row (rules parse.*)."""

    def __init__(self, line: int, rule: str, message: str) -> None:
        super().__init__(message)
        self.line, self.rule, self.message = line, rule, message
