"""TEST DOUBLE of ``torch.npu.set_aoe`` (torch_npu.npu.utils): AOE operator tuning's switch.
The real one turns on the dump of every operator's shapes and formats into ``dump_path`` for the
``aoe --job_type=2`` tuner; here it checks the path as the real one does (a non-empty string;
missing folders are made, nested ones too), records the call (msft_tf_standin.record:
``MSFT_STANDIN_LOG=<file>``) and writes an ``aoe_dump.json`` marker listing the calls, where
the real dump would go, so a launcher's check for it can run."""

from __future__ import annotations

import json
import os

from msft_tf_standin import record


def set_aoe(dump_path: str) -> None:
    if not isinstance(dump_path, str) or not dump_path.strip():
        raise ValueError(f"set_aoe: dump_path must be a non-empty path, not {dump_path!r}")
    folder = os.path.abspath(dump_path)
    os.makedirs(folder, exist_ok=True)
    marker = os.path.join(folder, "aoe_dump.json")
    calls = []
    if os.path.exists(marker):
        with open(marker, encoding="utf-8") as fh:
            calls = json.load(fh)
    calls.append({"pid": os.getpid(), "dump_path": dump_path})
    with open(marker, "w", encoding="utf-8") as out:
        json.dump(calls, out)
    record("npu.set_aoe", dump_path=dump_path, folder=folder)
