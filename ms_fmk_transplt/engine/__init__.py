"""The migration engine: ``migrate_source(source, path, tables)`` migrates one file in memory (see
engine/migrate.py); ``EngineOptions`` is what the user asked for beyond the built-in rules."""

from __future__ import annotations

from ms_fmk_transplt.engine.migrate import fold_file_rows, migrate_source
from ms_fmk_transplt.engine.options import DEFAULT_OPTIONS, EngineOptions

__all__ = ["DEFAULT_OPTIONS", "EngineOptions", "fold_file_rows", "migrate_source"]
