"""The span pass gives a file back to the LibCST pass when it meets code it does not model."""

from __future__ import annotations


class Decline(Exception):
    """Raised inside the span pass: this file goes through the LibCST pass instead (the reason
    is counted by the benchmark; outputs are the same either way, only slower)."""
