"""The costliest reports of a run kept in the result cache: the workbook and report.html. A
re-run whose records, options and notes are those of an earlier run (and, for the page, whose
shown files hold the same text) gives the same ones, so it writes the stored bytes instead of
building them again.

The key is a digest of everything they read, made by the run (``digest``: the run's
fingerprint, which holds the tool's code, its tables, the target and the result-changing
options, then every option, the notes and every file's record as the cache keeps it), the
report's name and the names of its sibling reports, and for the page the input and migrated
bytes of every file it shows. The time of the run is the one thing left out: the page's run
time (minutes) is put back in; the workbook keeps the creation time of the run that first wrote
it. An entry is data read as the cache reads any (a damaged one is a miss)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from ms_fmk_transplt.scan.cache import Cache

WHEN = re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d")  # the page's run time, as html_report writes it


@dataclass(frozen=True)
class ReportCache:
    cache: Cache
    digest: str  # of the run's records, options and notes (made by the run)

    def get(self, name: str, extra: bytes = b"") -> bytes | None:
        entry = self.cache.get(self._key(name, extra))
        if entry is None or entry.payload is None or entry.value != {"report": name}:
            return None
        return entry.payload

    def put(self, name: str, data: bytes, extra: bytes = b"") -> None:
        self.cache.put(self._key(name, extra), {"report": name}, data)

    def get_page(self, name: str, extra: bytes, when: bytes) -> bytes | None:
        """A stored page with this run's time put in place of the time it was stored with."""
        entry = self.cache.get(self._key(name, extra))
        if entry is None or entry.payload is None or type(entry.value) is not dict:
            return None
        at = entry.value.get("when_at")
        if entry.value.keys() != {"report", "when_at"} or entry.value["report"] != name:
            return None
        page = entry.payload
        if type(at) is not int or at < 0 or not WHEN.fullmatch(page, at, at + len(when)):
            return None
        return page[:at] + when + page[at + len(when) :]

    def put_page(self, name: str, page: bytes, extra: bytes, when_at: int) -> None:
        self.cache.put(self._key(name, extra), {"report": name, "when_at": when_at}, page)

    def _key(self, name: str, extra: bytes) -> str:
        digest = hashlib.sha256(f"report|{name}|{self.digest}|".encode())
        digest.update(extra)
        return digest.hexdigest()
