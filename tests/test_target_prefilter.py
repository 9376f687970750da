"""The target scan's byte-level test (engine/target_filter.py may_concern_target): a file is parsed
for operator-support and advice rows only when a listed API's last part can name it. A chain
like ``x.sum()`` cannot when no import binds ``x``: parsing such a file found no line to walk,
so it is not parsed (its log line says "(pre-filter)"); rows of every file that has them are
unchanged."""

from __future__ import annotations

import pytest

from ms_fmk_transplt.engine.target_filter import may_concern_target
from ms_fmk_transplt.engine.target_scan import target_notices
from ms_fmk_transplt.tables import Tables, load_tables


@pytest.fixture(scope="module")
def tables() -> Tables:
    return load_tables("2.1.0")


LISTED = "from torch.ao.nn import qat\n\nlayer = qat.Linear(4, 4, qconfig=None)\n"


def test_a_listed_api_through_an_imported_name_is_scanned(tables: Tables) -> None:
    assert "torch.ao.nn.qat.Linear" in tables.operators.entries
    rows = target_notices(LISTED.encode(), "m.py", tables)
    assert rows and [r.api for r in rows] == ["torch.ao.nn.qat.Linear"]
    aliased = "import torch.ao.nn.qat as q\n\nlayer = q.Linear(4, 4, qconfig=None)\n"
    assert [r.api for r in target_notices(aliased.encode(), "m.py", tables) or []] == [
        "torch.ao.nn.qat.Linear"
    ]


@pytest.mark.parametrize(
    "source",
    [
        "import torch\n\nlayer = model.Linear(4, 4)\ntotal = x.sum()\n",  # roots no import binds
        "import torch\n\ntotal = (a + b).sum()\n",  # no chain of names at all
        # imported roots, but no listed API ends in the chain's text
        "import torch\nfrom torch import nn\n\nlayer = nn.Linear(4, 4)\nt = torch.nn.Linear\n",
        # an alias whose path, followed by the chain, is no listed API
        "import torch.nn as nn\nfrom torch.nn import (functional as F,\n  init)\n\n"
        "layer = nn.Linear(4, 4)\n",
    ],
)
def test_a_listed_last_part_on_an_unimported_name_is_not_parsed(
    tables: Tables, source: str
) -> None:
    assert not may_concern_target(source.encode(), tables)
    assert target_notices(source.encode(), "m.py", tables) is None  # not parsed


@pytest.mark.parametrize(
    "source",
    [
        # the same chain, but the file holds a pattern's word: those lines are walked
        "import torch\n\ntotal = x.sum()\ny = x.transpose(0, 1)\ny = y.contiguous()\n",
        # a parenthesized import clause with a comment: its names are not known for sure
        "from torch.ao.nn import (  # quantized (aware)\n    qat,\n)\n\nx.Linear(2, 2)\n",
        # the last part itself imported
        "from torch.ao.nn.qat import Linear\n",
        # a chain from an alias: its path is not in its text
        "import torch.ao.nn as tnn\n\nlayer = tnn.qat.Linear(4, 4, qconfig=None)\n",
        # an alias whose path is not read here (relative, or a `from` continued by a backslash)
        "from . import layers as nn\n\nlayer = nn.Linear(4, 4)\n",
        "from torch.ao.nn \\\n    import qat as nn\n\nlayer = nn.Linear(4, 4)\n",
    ],
)
def test_what_may_name_a_listed_api_is_still_parsed(tables: Tables, source: str) -> None:
    assert may_concern_target(source.encode(), tables)
    assert target_notices(source.encode(), "m.py", tables) is not None  # parsed
