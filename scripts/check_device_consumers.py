"""Check ``rules/device_consumers.json``, the calls of non-torch libraries that take a device of
their own (rule device_strings.non_torch_consumer).

Usage::

    python scripts/check_device_consumers.py [--index]

Always: the table's shape (ms_fmk_transplt/tables/device_consumer_table.py ``shape_problems``:
every entry names its library, its calls by qualified name, the parameter, what it accepts,
an action (manual/caveat), what to do on Ascend, and the public source it was read at with the
version; it gives the strings that select CUDA or is a switch; a call belongs to one entry).

``--index``: the version each source names is a release of the library on the package index
(``pip index versions``; needs the network or a configured index).

How the table is rebuilt: each entry's facts are read from the source its ``source`` field
names (the library's release: the signature of each call and what the parameter accepts; for
onnxruntime, the CANN execution provider's page), at a newer release when the table is
refreshed; the field is then updated with the version and commit read. Exit status: 0 when the
table is consistent, 1 with one line per problem.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "rules" / "device_consumers.json"
sys.path.insert(0, str(ROOT))

from ms_fmk_transplt.tables.device_consumer_table import shape_problems  # noqa: E402

# the package whose releases a source's version names, where it is not the library's pip name
INDEX_NAMES = {"onnxruntime": "onnxruntime-cann"}
RELEASE = re.compile(r"(?<![\w.])(\d+\.\d+(?:\.\d+)?)(?![\w.])")


def index_problems(raw: dict[str, Any]) -> list[str]:
    problems = []
    for entry in raw["consumers"]:
        package = INDEX_NAMES.get(entry["library"], entry["library"])
        named = RELEASE.search(entry["source"])
        if named is None:
            continue
        out = subprocess.run(
            [sys.executable, "-m", "pip", "index", "versions", package],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        if named.group(1) not in re.split(r"[\s,()]+", out):
            problems.append(f"{entry['library']}: {package} {named.group(1)} not on the index")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--index", action="store_true", help="check versions on the index")
    args = parser.parse_args()
    raw = json.loads(TABLE.read_text(encoding="utf-8"))
    problems = shape_problems(raw)
    if args.index and not problems:
        problems += index_problems(raw)
    for problem in problems:
        print(f"rules/device_consumers.json: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
