"""Links from one report to another file of the output (report.html, the workbooks, the zoo
index): always a relative URL built from path segments, each percent-encoded, never the raw
path. A folder named ``javascript:alert(1)`` becomes ``javascript%3Aalert%281%29/report.html``,
which no browser or spreadsheet program reads as a scheme, a host, a query or a fragment."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from urllib.parse import quote


def relative_url(path: str) -> str:
    """The URL of ``path``, a relative path with ``/`` separators (e.g. a report row's File)."""
    # fsencode: the bytes of a name that is not UTF-8 (kept as surrogates) are encoded as they are
    return "/".join(quote(os.fsencode(part), safe="") for part in PurePosixPath(path).parts)


def url_between(target: Path, start: Path) -> str:
    """The relative URL of the file ``target`` seen from the folder ``start``."""
    return relative_url(os.path.relpath(target, start).replace(os.sep, "/"))
