"""A file the engine failed on (file_migration.py reports it and copies the file unchanged)."""

from __future__ import annotations

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, SKIP_FILE, UNREAD_FILE, declare

INTERNAL_ERROR = declare(
    "engine.internal_error",
    "the tool failed on a file (a bug): the file is copied unchanged, the run exits 1",
    "Each file is migrated in isolation: when the engine raises on one, that file is copied to the "
    "output byte for byte, listed as a `failed_file` row (open work: migrate it by hand) with the "
    "exception, its traceback is in the log, the other files are migrated as usual, and the run "
    "exits with code 1 at the end. Please report it with the file (or a reduced copy).",
    kind=OPEN_WORK,
    opt_out=SKIP_FILE,
    fixed=UNREAD_FILE,
)
