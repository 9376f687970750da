"""A file with a byte order mark, bare CR or CRLF line ends, or a coding cookie (latin-1, gbk)
is read as Python reads it and written back in its own encoding, line ends and BOM: the result
is the result of the plain UTF-8 file with \\n line ends, carried over."""

from __future__ import annotations

import pytest
from fixture_files import READABLE_INPUTS, relative

from ms_fmk_transplt.engine.migrate import migrate_source
from ms_fmk_transplt.events import FileResult
from ms_fmk_transplt.tables import load_tables

BOM = b"\xef\xbb\xbf"
# inputs a variant is not compared on, and why
NOT_COMPARED = {
    # a BOM with a latin-1 cookie is a file CPython refuses ("encoding problem")
    ("bom", "projects/toolkit/toolkit/latin1_helper.py"),
    # open problem: the skip-file comment is not seen after a BOM (the file is migrated)
    ("bom", "rules/optout.skip_file/skip_file.py"),
    # open problem: CPython honours the latin-1 cookie of a file with bare CR line ends, the
    # span pass reports parse.decode_error
    ("cr", "projects/toolkit/toolkit/latin1_helper.py"),
    # open problem: the bidi-control notice of a file with bare CR line ends is on line 1 (the
    # lines are counted on \n only)
    ("cr", "rules/parse.bidi_control/trojan_source.py"),
}


def _migrate(source: bytes, name: str) -> FileResult:
    return migrate_source(source, name, load_tables())


def _with_line_ends(data: bytes, end: bytes) -> bytes:
    return data.replace(b"\n", end)


def _pair(variant: str, plain: bytes, name: str) -> tuple[bytes, bytes, FileResult] | None:
    """(the variant's source, its expected output, the result whose events and notices it
    must have); None when the file cannot be written in the variant's encoding."""
    if variant == "bom":
        base = _migrate(plain, name)
        return BOM + plain, BOM + base.output, base
    if variant in ("cr", "crlf"):
        end = b"\r" if variant == "cr" else b"\r\n"
        base = _migrate(plain, name)
        return _with_line_ends(plain, end), _with_line_ends(base.output, end), base
    try:
        text = plain.decode("utf-8").replace("# ", "# é " if variant == "latin-1" else "# 中文 ")
        source = f"# -*- coding: {variant} -*-\n{text}".encode(variant)
    except (UnicodeDecodeError, UnicodeEncodeError):
        return None
    utf8 = "# -*- coding: utf-8 -*-\n"
    base = _migrate(f"{utf8}{text}".encode(), name)
    cookie = f"# -*- coding: {variant} -*-\n"
    return source, base.output.decode("utf-8").replace(utf8, cookie, 1).encode(variant), base


@pytest.mark.parametrize("variant", ["bom", "cr", "crlf", "latin-1", "gbk"])
def test_encodings_and_line_ends_as_python_reads_them(variant: str) -> None:
    compared = 0
    for case in READABLE_INPUTS:
        if (variant, relative(case)) in NOT_COMPARED:
            continue
        plain = case.read_bytes().replace(b"\r\n", b"\n")
        pair = _pair(variant, plain, case.name)
        if pair is None:
            continue
        source, expected, base = pair
        result = _migrate(source, case.name)
        where = relative(case)
        assert result.output == expected, where
        assert (result.events, result.notices) == (base.events, base.notices), where
        compared += 1
    assert compared > 150
