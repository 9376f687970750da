"""When the command started: the console script marks it as its first step, and the first run of
the command takes it as its start, so that the time a run reports covers the whole command (its
start-up, the tables, the migration and the reports), as a user's clock measures it."""

from __future__ import annotations

from datetime import datetime

_marked: list[datetime] = []


def mark() -> None:
    """The command starts now (the console script's first step)."""
    _marked[:] = [datetime.now()]


def take() -> datetime:
    """The command's start for its first run (the mark, once), else now (a later model of a
    zoo, the second side of a kit, a run without the console script: from here)."""
    if _marked:
        return _marked.pop()
    return datetime.now()
