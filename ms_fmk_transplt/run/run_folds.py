"""The rows folded across the files of a run (registry.fold_run_rows: a launch setting that
many config files repeat is one row, and so is a library whose action is in the library
itself), once every file's record exists and before the reports: after the tree is migrated,
and after the parts of ``--shard`` are merged, so a sharded run reports what a single run does.
The records themselves are kept as they are (a part's records, msft_shard.json, are each file's
own rows); the reports read a copy."""

from __future__ import annotations

import dataclasses

from ms_fmk_transplt.engine.rules import registry
from ms_fmk_transplt.events import Severity
from ms_fmk_transplt.records import RunResult


def folded(result: RunResult) -> tuple[RunResult, list[tuple[Severity, str]]]:
    """A copy of ``result`` whose records hold the run's folded rows, its notes followed by the
    log lines of the folds; and those lines (not a part's records)."""
    run = registry.RunFolding(result.tables, migrated=not result.options.analyse)
    rows, lines = registry.fold_run_rows([record.notices for record in result.files], run)
    if not lines:
        return result, []
    files = [
        record if new is record.notices else dataclasses.replace(record, notices=new)
        for record, new in zip(result.files, rows)
    ]
    notes = [(Severity.INFO, line) for line in lines]
    return dataclasses.replace(result, files=files, notes=[*result.notes, *notes]), notes
