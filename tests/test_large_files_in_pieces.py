"""A file larger than CHUNK_BYTES is parsed and walked piece by piece (safety/chunks.py):
the pieces cut only between top-level statements, and every fixture migrates exactly as in one
piece, by default and with -s (which keeps what it found over the pieces)."""

from __future__ import annotations

import ast

import pytest
from fixture_files import READABLE, relative

from ms_fmk_transplt.engine.migrate import migrate_source
from ms_fmk_transplt.engine.options import DEFAULT_OPTIONS, EngineOptions
from ms_fmk_transplt.safety import chunks
from ms_fmk_transplt.tables import load_tables

OPTIONS = {"default": DEFAULT_OPTIONS, "-s": EngineOptions(specify_device=True)}
# the span pass keeps the trees of the first pieces (up to KEEP_BYTES of source) from its first
# reading for its walk, and parses the others again: none kept, some, all
KEEP = {"none kept": 0, "some kept": 900, "all kept": chunks.KEEP_BYTES}


@pytest.mark.parametrize("keep", KEEP)
@pytest.mark.parametrize("mode", OPTIONS)
def test_large_files_in_pieces_give_the_same_result(mode: str, keep: str, monkeypatch) -> None:
    tables, options = load_tables(), OPTIONS[mode]
    monkeypatch.setattr(chunks, "KEEP_BYTES", KEEP[keep])
    cases = [(p, p.read_bytes()) for p in READABLE]
    if mode == "-s":  # hard-coded indices, where a rank is read
        cases = [(p, s) for p, s in cases if "specify_device" in str(p) or "/projects/" in str(p)]
    whole = [migrate_source(source, p.name, tables, options) for p, source in cases]
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 300)
    several = 0
    for (path, source), expected in zip(cases, whole):
        several += len(list(chunks.pieces(source))) > 1
        got = migrate_source(source, path.name, tables, options)
        assert (got.output, got.events, got.notices) == (
            expected.output,
            expected.events,
            expected.notices,
        ), relative(path)
    assert several > (20 if mode == "default" else 10)


def test_pieces_of_a_large_file_cover_it_exactly() -> None:
    """Cut only between top-level statements, lines as in the file."""
    source = b"".join(
        [
            b"import torch\n",
            b"@decorator(\n    1)\ndef f():\n    '''doc\nelse:\n'''\n    return 1\n",
            b"if x:\n    y = 1\nelse:\n    y = 2\n",
            b"try:\n    pass\nexcept E:\n    pass\nfinally:\n    pass\n",
            b"z = (1,\n2)\n",
            b"s = '''\ntext at column zero\n'''\n",
        ]
        * 40
    )
    cut = list(chunks.pieces(source, size=64))
    assert len(cut) > 10
    starts = [piece[1] for piece, _ in cut]
    assert starts == sorted(starts) and cut[-1][0][2] == len(source)
    assert "".join(
        ast.dump(stmt, include_attributes=True) for _, tree in cut for stmt in tree.body
    ) == "".join(ast.dump(stmt, include_attributes=True) for stmt in ast.parse(source).body)
