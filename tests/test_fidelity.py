"""Formatting, line endings and encodings survive: only the migrated tokens change."""

from __future__ import annotations

import sys

from helpers import assert_events_match_diff, tables_for

from ms_fmk_transplt.engine import migrate_source
from ms_fmk_transplt.events import FileStatus


def test_crlf_is_kept() -> None:
    src = b"import torch\r\n\r\nx = torch.ones(1).cuda()  # move\r\n"
    result = migrate_source(src, "w.py", tables_for())
    assert (
        result.output
        == b"import torch\r\nimport torch_npu\r\n\r\nx = torch.ones(1).npu()  # move\r\n"
    )
    assert_events_match_diff(src, result.output, result.events)


def test_bom_is_kept() -> None:
    src = b"\xef\xbb\xbfimport torch\nd = torch.device('cuda')\n"
    result = migrate_source(src, "b.py", tables_for())
    assert result.output == b"\xef\xbb\xbfimport torch\nimport torch_npu\nd = torch.device('npu')\n"


def test_latin1_cookie_is_kept() -> None:
    src = "# -*- coding: latin-1 -*-\n# Entraînement\nimport torch\nx = 'cuda'\n".encode("latin-1")
    result = migrate_source(src, "l.py", tables_for())
    expected = (
        "# -*- coding: latin-1 -*-\n# Entraînement\nimport torch\nimport torch_npu\nx = 'npu'\n"
    ).encode("latin-1")
    assert result.output == expected


def test_tabs_quotes_and_comments_are_kept() -> None:
    src = (
        b"import torch\nif True:\n\tx = torch.zeros(2,  device = 'cuda' )  # keep 'cuda' here\n"
        b'\ty = x.to( "cuda:0" )\n'
    )
    result = migrate_source(src, "t.py", tables_for())
    assert result.output == (
        b"import torch\nimport torch_npu\nif True:\n\tx = torch.zeros(2,  device = 'npu' )"
        b"  # keep 'cuda' here\n\ty = x.to( \"npu:0\" )\n"
    )


def test_bare_cr_line_endings_keep_the_final_newline() -> None:
    """Old Mac line endings: LibCST alone drops the file's final CR (found by the generated
    programs of test_properties)."""
    src = b"import torch\rif torch.cuda.is_available():\r    import torch\r"
    result = migrate_source(src, "mac.py", tables_for())
    assert result.output == (
        b"import torch\rimport torch_npu\rif torch.npu.is_available():\r    import torch\r"
    )
    assert_events_match_diff(src, result.output, result.events)
    assert migrate_source(result.output, "mac.py", tables_for()).output == result.output


def test_no_trailing_newline() -> None:
    src = b"import torch\nx = torch.ones(1).cuda()"
    assert (
        migrate_source(src, "n.py", tables_for()).output
        == b"import torch\nimport torch_npu\nx = torch.ones(1).npu()"
    )


def test_nothing_to_migrate_is_byte_identical() -> None:
    src = b"import torch  \n\n\nx=torch.ones(1)   # cuda-free\n"
    result = migrate_source(src, "x.py", tables_for())
    assert result.output is src or result.output == src
    assert result.status == FileStatus.UNCHANGED


def test_python2_file_is_skipped_with_line() -> None:
    src = b"import torch\nprint 'hello', torch.cuda.device_count()\n"
    result = migrate_source(src, "py2.py", tables_for())
    assert result.status == FileStatus.SKIPPED
    assert result.output == src
    [notice] = result.notices
    assert notice.line == 2 and "Missing parentheses" in notice.message


def test_new_syntax_is_migrated() -> None:
    src = (
        b"import torch\n"
        b"type Pair[T] = tuple[T, T]\n"
        b"def first[T](p: Pair[T]) -> T:\n    return p[0]\n"
        b"name = 'x'\nmsg = f\"{f'{name}'}\"\n"
        b"x = torch.ones(1).cuda()\n"
    )
    result = migrate_source(src, "new.py", tables_for())
    if sys.version_info >= (3, 12):  # the stdlib parser reads PEP 695: the span pass migrates
        assert result.status == FileStatus.CHANGED
        assert b"x = torch.ones(1).npu()" in result.output
    else:  # code that needs a newer Python than the tool's is reported, not half-understood
        assert result.status == FileStatus.SKIPPED and result.output == src
        (notice,) = result.notices
        assert notice.rule == "parse.syntax_error" and notice.line == 2
        assert "needs a newer Python than" in notice.message
        assert "newer Python" in notice.tip and "Python 2" not in notice.tip  # its real reason
