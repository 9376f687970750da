"""The TensorFlow adapter table (rules/tf_adapter.json), its loader and its check script."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from required_tools import needs_tool

from ms_fmk_transplt.tables import load_tables
from ms_fmk_transplt.tables.tf_adapter_table import UNKNOWN, TfAdapterTable, loads

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "check_tf_adapter.py"
RAW: dict[str, Any] = json.loads((ROOT / "rules" / "tf_adapter.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def table() -> TfAdapterTable:
    return load_tables().tf_adapter


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False
    )


def test_shape_check_passes_on_the_committed_table() -> None:
    done = _run()
    assert done.returncode == 0, done.stdout
    assert f"{len(RAW['options'])} options checked for shape" in done.stdout


def test_shape_check_names_a_bad_entry(tmp_path: Path) -> None:
    bad = copy.deepcopy(RAW)
    entry = next(e for e in bad["options"] if e["name"] == "graph_run_mode")
    entry["kind"] = "integer"
    bad["constructors"]["DumpConfig"].append("dump_nothing")
    path = tmp_path / "t.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    done = _run("--table", str(path))
    assert done.returncode == 1
    assert "option 'graph_run_mode': kind 'integer'" in done.stdout
    with pytest.raises(ValueError, match="graph_run_mode"):
        loads(bad)


def test_loads_rejects_a_value_of_the_wrong_kind() -> None:
    bad = copy.deepcopy(RAW)
    entry = next(e for e in bad["options"] if e["name"] == "deterministic")
    entry["values"] = [0, "1"]
    with pytest.raises(ValueError, match=r"option 'deterministic': value '1'"):
        loads(json.dumps(bad))


def test_the_table_holds_the_support_lists_and_sources(table: TfAdapterTable) -> None:
    counts = {
        version: sum(1 for status, _ in apis.values() if status == "unsupported")
        for version, apis in table.api_support.items()
    }
    assert counts == {"1.15": 32, "2.6": 192}
    assert table.api("1.15", "tensorflow.enable_eager_execution") is not None
    assert table.api("2.6", "tensorflow.add") is None
    assert table.constructors["RunConfig"][:2] == ("model_dir", "tf_random_seed")
    assert table.source["commit"] == "085a7b2e7feac20dae2e3371fe08ea34296ea9fc"


@pytest.mark.parametrize(
    ("name", "value", "place"),
    [
        ("precision_mode", "allow_mix_precision", "NPURunConfig"),
        ("graph_run_mode", 0, "session"),
        ("accelerate_train_mode", "fast|step|0.2", "ExperimentalConfig"),
        ("accelerate_train_mode", "fast1|step|0.9", "ExperimentalConfig"),
        ("accelerate_train_mode", "fast|loss|1.01", "ExperimentalConfig"),
        ("accelerate_train_mode", "fast|loss|1.5", "ExperimentalConfig"),
        ("experimental_accelerate_train_mode", "fast|step|0.5", "session"),
        ("dump_step", "0|3-5|10", "DumpConfig"),
        ("profiling_options", "training_trace:task_trace", "initialize_system"),
        ("profiling_options", '{"output": "/tmp", "training_trace": "on"}', "ProfilingConfig"),
        ("local_rank_id", 7, "NPURunConfig"),
        ("iterations_per_loop", UNKNOWN, "NPURunConfig"),
        ("op_debug_level", 3, "NPURunConfig"),  # deprecated, still valid
    ],
)
def test_valid_options(table: TfAdapterTable, name: str, value: object, place: str) -> None:
    assert table.problem(name, value, place) is None


@pytest.mark.parametrize(
    ("name", "value", "place", "expected"),
    [
        (
            "precison_mode",
            "x",
            "NPURunConfig",
            "unknown NPU option 'precison_mode' (did you mean 'precision_mode'?)",
        ),
        ("graph_run_mode", 2, "NPURunConfig", "'graph_run_mode' must be one of 0, 1 (got 2)"),
        ("precision_mode", "fp32", "session", "'precision_mode' must be one of \"force_fp32\""),
        ("aoe_mode", 2, "NPURunConfig", '\'aoe_mode\' takes a string ("1", "2", "4"'),
        (
            "enable_reduce_precision",
            True,
            "NPURunConfig",
            "'enable_reduce_precision' is not supported by the adapter",
        ),
        (
            "precision_mode",
            "origin",
            "ExperimentalConfig",
            "'precision_mode' is not an option of ExperimentalConfig (it is one of NPURunConfig, "
            "session",
        ),
        ("iterations_per_loop", 0, "NPURunConfig", "'iterations_per_loop' must be >= 1 (got 0)"),
        ("local_rank_id", 8, "NPURunConfig", "'local_rank_id' must be <= 7 (got 8)"),
        ("dump_step", "5-3", "DumpConfig", "'dump_step' must be steps or ranges"),
        ("profiling_options", "op_trace:task_trace", "session", "'profiling_options' must be"),
        ("mix_compile_mode", "True", "NPURunConfig", "'mix_compile_mode' takes True or False"),
    ],
)
def test_problems(
    table: TfAdapterTable, name: str, value: object, place: str, expected: str
) -> None:
    found = table.problem(name, value, place)
    assert found is not None and found.startswith(expected), found


@pytest.mark.parametrize(
    "value",
    [
        "fast|step|0.95",
        "fast|step|0.19",
        "fast|loss|1.0",
        "fast|loss|1.51",
        "slow|step|0.5",
        "fast|step",
        "fast|epoch|0.5",
        "fast|step|x",
    ],
)
def test_accelerate_train_mode_out_of_range(table: TfAdapterTable, value: str) -> None:
    found = table.problem("accelerate_train_mode", value, "ExperimentalConfig")
    assert found == (
        '\'accelerate_train_mode\' must be "fast|step|R" with R in 0.2-0.9 or "fast|loss|R" '
        f"with R in 1.01-1.5 (first field fast or fast1) (got {value!r})"
    )


def test_unknown_value_checks_only_the_name(table: TfAdapterTable) -> None:
    assert table.problem("graph_run_mode", UNKNOWN, "NPURunConfig") is None
    assert table.problem("graph_run_mod", UNKNOWN, "NPURunConfig") is not None


def test_parse_value(table: TfAdapterTable) -> None:
    assert table.parse_value("enable_dump", "True") is True
    assert table.parse_value("enable_dump", "0") is False
    assert table.parse_value("graph_run_mode", "0") == 0
    assert table.parse_value("precision_mode", "must_keep_origin_dtype") == "must_keep_origin_dtype"
    assert table.parse_value("dump_path", "/tmp/dump") == "/tmp/dump"
    with pytest.raises(ValueError, match=r"'graph_run_mode' must be one of 0, 1 \(got 5\)"):
        table.parse_value("graph_run_mode", "5")
    with pytest.raises(ValueError, match=r"'graph_run_mode' takes an integer \(0, 1\)"):
        table.parse_value("graph_run_mode", "one")
    with pytest.raises(ValueError, match="'enable_dump' takes true/false/1/0"):
        table.parse_value("enable_dump", "yes")
    with pytest.raises(ValueError, match="did you mean 'precision_mode'"):
        table.parse_value("precison_mode", "x")


def test_missing_requirements(table: TfAdapterTable) -> None:
    assert table.missing_requirements({"enable_dump"}, {"enable_dump": True}) == [
        "'enable_dump' is set but 'dump_path' is not"
    ]
    assert table.missing_requirements({"enable_dump", "dump_path"}, {"enable_dump": True}) == []
    assert table.missing_requirements({"enable_dump"}, {"enable_dump": False}) == []
    assert table.missing_requirements(
        {"profiling_options"}, {"profiling_options": "training_trace:task_trace"}
    ) == ["'profiling_options' is set but 'fp_point' and 'bp_point' are not"]
    assert (
        table.missing_requirements({"profiling_options"}, {"profiling_options": "op_trace"}) == []
    )
    assert table.missing_requirements({"optypelist_for_implmode"}, {}) == [
        "'optypelist_for_implmode' is set but 'op_select_implmode' is not"
    ]


def test_status_notices(table: TfAdapterTable) -> None:
    assert table.options["graph_memory_max_size"].status == "no_effect"
    assert table.options["buffer_optimize"].status == "not_supported"
    notice = table.notice("op_select_implmode")
    assert notice is not None and notice.startswith("'op_select_implmode' is deprecated")
    assert table.notice("precision_mode") is None


@needs_tool("MSFT_TF_SOURCE", os.environ.get("MSFT_TF_SOURCE"), "MSFT_TF_SOURCE not set")
def test_check_against_the_adapter_source() -> None:
    done = _run("--source", os.environ["MSFT_TF_SOURCE"])
    assert done.returncode == 0, done.stdout
    assert "--source: compared with master" in done.stdout


def test_source_mode_reports_a_wrong_signature(tmp_path: Path) -> None:
    """--source against a tiny git repository whose npu_config.py drops a parameter."""
    repo = tmp_path / "repo"
    config = repo / "tf_adapter/python/npu_bridge/estimator/npu/npu_config.py"
    config.parent.mkdir(parents=True)
    classes = dict(RAW["constructors"])
    classes["MemoryConfig"] = classes["MemoryConfig"][:-1]
    config.write_text(
        "\n".join(
            f"class {cls}:\n    def __init__(self, {', '.join(p + '=None' for p in params)}):\n"
            "        pass\n"
            for cls, params in classes.items()
            if cls != "RunConfig"
        ),
        encoding="utf-8",
    )
    attrs = repo / "tf_adapter/util/npu_attrs.cc"
    attrs.parent.mkdir(parents=True)
    session = [e["name"] for e in RAW["options"] if "session" in e["places"]]
    attrs.write_text("".join(f'params.count("{n}");\n' for n in session[1:]), encoding="utf-8")
    _adapter_modules(repo, missing="init_resource")
    git = ["git", "-C", str(repo)]
    subprocess.run([*git, "init", "-q", "-b", "master"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run(
        [*git, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"], check=True
    )
    done = _run("--source", str(repo))
    assert done.returncode == 1
    assert "constructor MemoryConfig: table" in done.stdout
    assert f"option {session[0]!r}: tf_adapter/util/npu_attrs.cc@master does not read it" in (
        done.stdout
    )
    # every name the migration writes is checked: the one npu_init.py lacks is named
    init = "tf_adapter/python/npu_bridge/npu_init.py"
    assert done.stdout.count("tf_migration.json writes") == 1, done.stdout
    assert f"tf_migration.json writes init_resource: {init}@master does not bind" in done.stdout


def _adapter_modules(repo: Path, missing: str) -> None:
    """npu_init.py and npu_device packages binding every name rules/tf_migration.json writes
    but ``missing``."""
    migration = json.loads((ROOT / "rules" / "tf_migration.json").read_text(encoding="utf-8"))
    spec = importlib.util.spec_from_file_location("check_tf_adapter", SCRIPT)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    bridge, device = script.written_names(migration)
    python = repo / "tf_adapter" / "python"
    lines = []
    for name in sorted(bridge - {missing}):
        module, _, attr = name.rpartition(".")
        if module:
            (python / "fake").mkdir(parents=True, exist_ok=True)
            (python / "fake" / f"{module}.py").write_text(f"def {attr}(): pass\n", "utf-8")
            lines.append(f"from fake import {module}")
        else:
            lines.append(f"def {attr}(): pass")
    init = python / "npu_bridge" / "npu_init.py"
    init.parent.mkdir(parents=True, exist_ok=True)
    init.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for path in device:
        parts = path.split(".")[1:]
        folder = repo / "tf_adapter_2.x" / "python" / "npu_device"
        if len(parts) > 1:
            folder = folder.joinpath("_api", *parts[:-1])
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / "__init__.py").open("a", encoding="utf-8") as fh:
            fh.write(f"def {parts[-1]}(): pass\n")
