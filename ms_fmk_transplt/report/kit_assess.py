"""What ``kit assess`` writes besides the project as written: the runtime files next to the -m
script (``ASSESS_RUNTIME``: one line per file of ms_fmk_transplt/kits/ the recording needs) and
``msft_ops.json``, the target version's operator support (-v, the run's tables; its form:
tables/assess_support.py) and the kit's own lines, which the runtime takes off to name the input
project's lines:

``{"version": "2.x.y", "document": "2.x.y", "apis": {API: {...}}, "inserted": {FILE: [LINE]},
"root": "../.."}``

``document`` the version of the published list used (the nearest older one when the target has
none); ``inserted`` per file the kit changed (its path from msft_ops.json's folder) the lines of
the kit's tree it inserted; ``root`` the tree's root from msft_ops.json's folder (``Where``'s
paths are the project's, whatever folder the -m script is in). Written from the tables and the
run's events."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from ms_fmk_transplt import kits
from ms_fmk_transplt.events import ChangeEvent, Operation
from ms_fmk_transplt.tables.assess_support import operator_support
from ms_fmk_transplt.tables.target_tables import OperatorTable

OPS_JSON = "msft_ops.json"
# the files of ms_fmk_transplt/kits/ written next to the -m script of kit assess, those that
# exist (one line per file the runtime needs)
ASSESS_RUNTIME = (
    "msft_kit.py",
    "msft_assess.py",
    "msft_assess_report.py",
)


def runtime_files() -> tuple[Path, ...]:
    """The runtime files of kit assess that ms_fmk_transplt/kits/ holds."""
    folder = Path(kits.__file__).parent
    return tuple(folder / name for name in ASSESS_RUNTIME if (folder / name).is_file())


def ops_json(
    table: OperatorTable, inserted: dict[str, list[int]] | None = None, root: str = "."
) -> str:
    content = {
        "version": table.target,
        "document": table.document_version,
        "apis": operator_support(table),
        "inserted": inserted or {},
        "root": root,
    }
    return json.dumps(content, indent=1, ensure_ascii=False) + "\n"


def inserted_lines(events: Iterable[ChangeEvent], folder: Path) -> dict[str, list[int]]:
    """The lines the run inserted, per file (its path from ``folder``, where msft_ops.json is;
    ``/``-separated), in the numbering of the written tree."""
    out: dict[str, list[int]] = {}
    for event in events:
        if event.operation == Operation.INSERT and event.out_start_line:
            rel = os.path.relpath(event.file, folder.as_posix() or ".")
            last = max(event.out_start_line, event.out_end_line)
            lines = range(event.out_start_line, last + 1)
            out.setdefault(PurePosixPath(Path(rel)).as_posix(), []).extend(lines)
    return {path: sorted(set(lines)) for path, lines in sorted(out.items())}


PRECONDITIONS = (
    "The original script, as it runs today (GPU or CPU): nothing is migrated; only the kit's "
    "calls are added. Tiny settings (a small model, a small batch) are enough: the APIs and "
    "whether shapes change matter, not the speed.",
    "One process: several would write the same `assess/` folder; a script that needs a "
    'process group runs with `PYTHON="torchrun --nproc_per_node=1"`.',
    "Eager mode: inside `torch.compile` the recording may not see each call.",
    "The run stops after `MSFT_ASSESS_STEPS` training steps (the launcher's default; "
    "`--steps` of the kit set it): whatever those steps run (an evaluation inside the loop "
    "too) is recorded; a loop that ends first pauses the recording until its next pass "
    "(`msft_kit.assess_end()` after the loop).",
)
# ops.csv's columns, as KIT_README.md explains them
COLUMNS = (
    ("API", "the torch-level name, as the tool's operator tables name it"),
    ("Calls", "how many times the recorded steps called it"),
    ("Dtypes", "the distinct dtypes of its tensor arguments"),
    (
        "Arguments",
        "the keyword arguments given (not the defaults); for a module the tables name "
        "(`torch.nn.LSTM`), its constructor arguments that differ from the defaults",
    ),
    ("Shapes", "the distinct shapes of its tensor arguments"),
    ("Dynamic", "`yes` when its shapes differ between steps (the NPU compiles each new shape)"),
    (
        "NPU",
        "supported / restricted (the table's restriction, and whether the actual arguments and "
        "dtypes hit it) / unsupported, for the target version",
    ),
    (
        "Where",
        "the first project `file:line` that reaches it (your project's numbering, not this "
        "tree's), and the library it goes through",
    ),
)


def readme_next(launcher: str, version: str, note: str = "") -> list[str]:
    """KIT_README.md's last section for kit assess: what to run, how to read what it writes."""
    lines = [
        f"1. `./{launcher} [arguments of the script]` where the project runs today: the first "
        "`MSFT_ASSESS_STEPS` training steps (5 unless `--steps` or the variable says otherwise) "
        "are recorded, then the run stops and writes `assess/ops.csv` and `assess/report.html` "
        "(a summary line on the terminal).",
        f"2. Read `assess/report.html` first (dynamic-shape APIs with their shapes per step at "
        f"the top), then `assess/ops.csv`, one row per API; NPU support is torch_npu {version}'s "
        f"(`{OPS_JSON}` next to the script, from the tool's tables; `-v` of the kit chooses"
        + (f"; {note}" if note else "")
        + "):",
        "",
        "| column | what it holds |",
        "| --- | --- |",
    ]
    lines += [f"| `{name}` | {text} |" for name, text in COLUMNS]
    lines += [
        "",
        "3. Fix or plan for the `unsupported` rows and the `restricted` ones whose arguments hit "
        "the restriction; an API marked `Dynamic` recompiles on the NPU at each new shape (pad "
        "or bucket its inputs to fixed sizes). Then migrate with `ms_fmk_transplt -i ... -o ... "
        "--assessed <this tree>/assess`: the unsupported and hit restricted APIs and the "
        "dynamic shapes become rows of its unsupported_op (rules `assess.*`), judged for its "
        "`-v`.",
    ]
    return lines
