"""What the span pass raises inside itself: code it does not model, or a file Python cannot read."""

from __future__ import annotations


class Decline(Exception):
    """Raised while a statement is walked, at code the span pass does not model: the walker
    rolls the statement back and leaves it as written, with an engine.unmodelled row
    (spans/walker.py, engine/rules/engine/unmodelled.py). span_pass itself never raises it."""


class Unreadable(Exception):
    """Raised by the span pass for a file Python itself cannot read (it does not decode, or the
    stdlib parser refuses it): copied unchanged and reported with this row (rules parse.*)."""

    def __init__(self, line: int, rule: str, message: str, newer_python: bool = False) -> None:
        super().__init__(message)
        self.line, self.rule, self.message = line, rule, message
        self.newer_python = newer_python  # the syntax of a newer Python than the tool's
