"""The library table (rules/libraries.json) and its check script; what the libraries family
makes of a file (one row per file and library) beyond the golden fixtures."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from ms_fmk_transplt.engine import migrate_source
from ms_fmk_transplt.engine.options import EngineOptions
from ms_fmk_transplt.tables import load_tables

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "check_libraries.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_libraries", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_passes_its_check() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    assert done.stdout == ""


def test_the_check_finds_a_missing_version_a_shared_module_and_a_bad_path() -> None:
    raw = json.loads((ROOT / "rules" / "libraries.json").read_text(encoding="utf-8"))
    raw["libraries"][0]["source"] = "somewhere"
    raw["libraries"][1]["modules"].append(dict(raw["libraries"][0]["modules"][0]))
    raw["libraries"][0]["ascend"] = {"package": "x"}
    problems = _script().shape_problems(raw)
    assert any("source names no version" in p for p in problems)
    assert any("also listed by" in p for p in problems)
    assert any("ascend needs package, min_version and how" in p for p in problems)


def _rows(code: str) -> list[tuple[int, str, str, str, str]]:
    result = migrate_source(code.encode(), "x.py", load_tables(), None)
    return [(n.line, n.rule, n.api, n.action, n.message) for n in result.notices if n.open_work]


def test_fourteen_uses_of_one_library_are_one_row_listing_the_lines() -> None:
    calls = "\n".join(f"    y{i} = xops.memory_efficient_attention(q, k, v)" for i in range(13))
    rows = _rows(f"import xformers.ops as xops\n\n\ndef f(q, k, v):\n{calls}\n")
    assert len(rows) == 1
    line, rule, api, action, message = rows[0]
    assert (line, rule, api, action) == (1, "libraries.cuda_only", "xformers.ops", "manual")
    assert message.startswith("xformers: 14 uses in this file (lines 1, 5, 6, 7,")
    assert "lines 1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17: xformers.ops, " in message


def test_a_library_with_an_ascend_path_names_the_package_and_version() -> None:
    code = (
        "from transformers import AutoModel\n\n\n"
        "def go(p):\n"
        "    return AutoModel.from_pretrained(p, attn_implementation='flash_attention_2')"
    )
    result = migrate_source(code.encode(), "x.py", load_tables(), None)
    (row,) = [n for n in result.notices if n.open_work]
    assert (row.rule, row.action, row.line) == ("libraries.npu_path", "caveat", 5)
    assert "Ascend path: transformers >= 4.32.0" in row.tip


def test_a_use_with_nothing_to_do_is_a_line_of_the_log_not_a_row() -> None:
    """deepspeed.initialize selects the NPU itself: the file has nothing to change, so the
    Ascend path goes to the log (libraries.ascend_path), not to the open-work rows."""
    code = "import deepspeed\n\n\ndef go(m, c):\n    return deepspeed.initialize(model=m, config=c)"
    result = migrate_source(code.encode(), "x.py", load_tables(), None)
    assert [n for n in result.notices if n.open_work] == []
    (note,) = [n for n in result.notices if n.rule == "libraries.ascend_path"]
    assert "Ascend path: deepspeed >= 0.12.6" in note.message and note.category == ""


def test_rows_of_two_libraries_stay_apart() -> None:
    code = "import apex\nimport bitsandbytes as bnb\nx = bnb.optim.Adam8bit\ny = apex.contrib\n"
    rows = _rows(code)
    assert sorted((r[0], r[2]) for r in rows) == [(1, "apex"), (2, "bitsandbytes")]


def test_a_switch_argument_given_a_variable_is_reported_a_false_constant_is_not() -> None:
    code = (
        "from transformers import AutoModelForCausalLM as M\n"
        "a = M.from_pretrained('p', load_in_8bit=flag)\n"
        "b = M.from_pretrained('p', load_in_8bit=False, load_in_4bit=None)\n"
    )
    rows = _rows(code)
    assert [(r[0], r[2]) for r in rows] == [(2, "transformers: load_in_8bit=...")]


def test_an_argument_of_a_library_the_file_does_not_use_is_not_reported() -> None:
    assert _rows("def f(load):\n    return load(load_in_8bit=True, gpus=2)\n") == []


TWO_USES = (
    "import torch\n"
    "import xformers.ops as xops\n"
    "x = torch.ones(1).cuda()\n"
    "y = xops.memory_efficient_attention(x, x, x)  # msft: ignore[libraries.npu_path]\n"
    "z = xops.memory_efficient_attention(y, y, y)\n"
)


def test_a_folded_row_lists_the_lines_the_reports_name() -> None:
    """The migrated file's lines (import torch_npu moves them down one); the input's with
    --analyse, whose reports name input lines."""
    for options, lines in (
        (None, "lines 3, 5, 6"),
        (EngineOptions(input_lines=True), "lines 2, 4, 5"),
    ):
        result = migrate_source(TWO_USES.encode(), "x.py", load_tables(), options)
        (row,) = [n for n in result.notices if n.open_work]
        assert f"xformers: 3 uses in this file ({lines}: " in row.message


def test_an_ignore_comment_drops_its_use_from_the_folded_row() -> None:
    code = TWO_USES.replace("ignore[libraries.npu_path]", "ignore[libraries.cuda_only]")
    result = migrate_source(code.encode(), "x.py", load_tables(), None)
    (row,) = [n for n in result.notices if n.open_work]
    assert "xformers: 2 uses in this file (lines 3, 6: " in row.message
