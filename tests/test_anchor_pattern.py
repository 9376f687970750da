"""A statement the span pass does not walk must hold nothing a rule acts on: every unsupported
API, environment variable and module, and every device call, is reachable only through a word
of the anchor pattern (engine/spans/anchors.py)."""

from __future__ import annotations

from ms_fmk_transplt.engine.spans.anchors import anchor_pattern
from ms_fmk_transplt.tables import load_tables


def test_every_table_entry_is_anchored() -> None:
    """However an API was imported, the part after the import alias, or the alias's path,
    holds an anchor."""
    tables = load_tables()
    anchors = anchor_pattern(tables)
    for key, entry in tables.unsupported.apis.items():
        if entry.when is not None:
            continue
        parts = key.split(".")
        for cut in range(1, len(parts) + 1):
            path, rest = ".".join(parts[:cut]), ".".join(parts[cut:])
            assert anchors.search(path.encode()) or anchors.search(rest.encode()), (key, cut)
    for name in tables.unsupported.env:
        assert anchors.search(name.encode()), name
    libraries = tables.unsupported.libraries
    for module in tables.unsupported.modules:
        # a CUDA-only library by its name; a listed part of a device-neutral one by its own,
        # or by the entry's word where that name is too common (basicsr.train: "basicsr")
        entry = libraries.entry(module) or {}
        word = module.split(".")[0] if libraries.kernel_library(module) else module.split(".")[-1]
        word = entry.get("word", word)
        assert anchors.search(word.encode()), module
        assert word in module.split("."), module
    for keyword, arguments in libraries.arguments.items():  # the keyword, or its call's name
        for argument in arguments:
            names = (keyword, *argument.calls[:1])
            assert any(anchors.search(name.encode()) for name in names), keyword
    # integer device indices are arguments of device calls: the call is the anchor
    for name in tables.int_device.device_calls:
        assert anchors.search(name.encode()), name
