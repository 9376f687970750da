"""The table of non-torch device consumers (rules/device_consumers.json) and its check script;
what rules device_strings.non_torch_consumer and device_strings.literal make of the shapes
around them beyond the golden fixtures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ms_fmk_transplt.engine import migrate_source
from ms_fmk_transplt.tables import load_tables
from ms_fmk_transplt.tables.device_consumer_table import DeviceConsumerTable, shape_problems

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "check_device_consumers.py"
RULE = "device_strings.non_torch_consumer"


def _raw() -> dict:
    return json.loads((ROOT / "rules" / "device_consumers.json").read_text(encoding="utf-8"))


def test_the_table_passes_its_check() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    assert done.stdout == ""


def test_the_check_finds_a_missing_source_a_shared_call_and_an_unclear_value() -> None:
    raw = _raw()
    raw["consumers"][0]["source"] = "read somewhere"
    raw["consumers"][1]["calls"].append(raw["consumers"][0]["calls"][0])
    raw["consumers"][2]["flag"] = True  # values and flag
    del raw["consumers"][3]["ascend"]
    problems = shape_problems(raw)
    assert any("no public address and version" in p for p in problems)
    assert any("also listed by" in p for p in problems)
    assert any("not both" in p for p in problems)
    assert any("needs ascend" in p for p in problems)
    with pytest.raises(ValueError, match="device_consumers.json"):
        DeviceConsumerTable(raw)


def test_every_entry_is_loaded_by_its_calls() -> None:
    table = load_tables().device_consumers
    assert table.by_call["faster_whisper.WhisperModel"].library == "faster-whisper"
    assert table.by_call["onnxruntime.InferenceSession"].selects_cuda("CUDAExecutionProvider")
    assert table.by_call["ctranslate2.Translator"].selects_cuda("cuda:1")
    assert not table.by_call["ctranslate2.Translator"].selects_cuda("cpu")
    assert table.roots == {"faster_whisper", "ctranslate2", "onnxruntime", "mergekit"}


def _run(code: str) -> tuple[str, list[tuple[int, str, str]]]:
    result = migrate_source(code.encode(), "x.py", load_tables(), None)
    rows = [(n.line, n.rule, n.action) for n in result.notices if n.open_work]
    return result.output.decode(), rows


def test_a_consumer_is_found_through_an_alias_and_by_position() -> None:
    out, rows = _run(
        "from faster_whisper import WhisperModel as WM\n"
        "import onnxruntime\n"
        'm = WM("small", "cuda")\n'
        's = onnxruntime.InferenceSession("m.onnx", None, ["CUDAExecutionProvider"])\n'
    )
    assert 'WM("small", "cuda")' in out
    assert rows == [(3, RULE, "manual"), (4, RULE, "manual")]


def test_a_local_class_of_the_same_name_is_no_consumer() -> None:
    out, rows = _run(
        "import torch\n\n\nclass WhisperModel:\n    def __init__(self, name, device):\n"
        "        self.x = torch.zeros(1, device=device)\n\n\n"
        'm = WhisperModel("small", device="cuda")\n'
    )
    assert 'device="npu"' in out
    assert not [r for r in rows if r[1] == RULE]


def test_a_computed_device_is_a_caveat_and_cpu_gives_no_row() -> None:
    out, rows = _run(
        "import ctranslate2\n\n\n"
        "def load(path, device):  # the caller's torch device: cuda, migrated to npu there\n"
        "    return ctranslate2.Generator(path, device=device)\n\n\n"
        'cpu = ctranslate2.Generator("m", device="cpu")\n'
    )
    assert rows == [(5, RULE, "caveat")]


def test_a_marker_read_through_from_pytest_import_mark_is_a_label() -> None:
    out, _ = _run(
        "import torch\nfrom pytest import mark\n\n\n"
        '@mark.runs_on(["cuda"])\ndef test_x():\n'
        '    assert torch.zeros(1, device="cuda").sum() == 0\n'
    )
    assert '@mark.runs_on(["cuda"])' in out
    assert 'device="npu"' in out


def test_a_membership_test_of_a_device_string_is_migrated() -> None:
    out, _ = _run(
        "import torch\n\n\ndef on_gpu(args, cfg):\n"
        '    return "cuda" in args.device, "cuda" in cfg, cfg.get("cuda")\n'
    )
    # args.device is no mapping the file reads: a device string; cfg is one (cfg.get("cuda"))
    assert '"npu" in args.device, "cuda" in cfg, cfg.get("cuda")' in out


def test_a_triton_backend_read_through_a_local_name_is_kept() -> None:
    out, _ = _run(
        "import torch\nimport triton\n\n\ndef is_cuda():\n"
        "    target = triton.runtime.driver.active.get_current_target()\n"
        '    return target.backend == "cuda", torch.device("cuda")\n'
    )
    # target is assigned a Triton value in the same scope: its backend is Triton's
    assert 'target.backend == "cuda", torch.device("npu")' in out
