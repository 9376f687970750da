from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture
def root() -> Path:
    return ROOT


# Tests run without the user-level result cache unless a test enables it explicitly.
os.environ.setdefault("MS_FMK_TRANSPLT_CACHE", "off")
