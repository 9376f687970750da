"""The runtime of kit assess (issue 48): msft_kit.assess_begin/assess_tick and msft_assess.py,
executed on CPU torch in a subprocess on small training scripts written here, the kit files on
PYTHONPATH as in a kit's tree. ops.csv and cuda_calls.csv are read back with csv."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
from required_tools import needs_tool

from ms_fmk_transplt.kits import msft_assess, msft_assess_report
from ms_fmk_transplt.report.kit_assess import ASSESS_RUNTIME

KITS = Path(__file__).resolve().parent.parent / "ms_fmk_transplt" / "kits"
TORCH = needs_tool("torch", importlib.util.find_spec("torch"), "torch is not installed")

LIBRARY = """
import torch


def inner(x):
    return torch.tanh(x)


def helper(x):
    return inner(x)
"""

TRAIN = """
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "site-packages"))
import extlib
import fakelib
import numpy
import torch
import torch.nn.functional as F

import msft_kit

weight = torch.ones(4, 3)
lstm = torch.nn.LSTM(3, 3, 2, dropout=0.5)
msft_kit.assess_begin()
for step in range(STEPS + int(torch.zeros(9).clone().sum())):  # before step 0: not compared
    msft_kit.assess_tick()
    torch.ones(2).clone()
    if step == 0:
        torch.ones(7).clone()  # a warm-up call: step 0 is not compared when later steps are
    batch = torch.ones(step + 1, 4)  # a growing batch
    batch.size()
    out = batch.matmul(weight)
    noise = torch.arange(8.0) - step * 2
    kept = noise[noise > 0]  # a boolean mask: its shape depends on the data
    F.interpolate(torch.ones(1, 1, 2, 2), scale_factor=2)
    torch.ones(3, dtype=torch.float64).exp()
    fakelib.helper(torch.ones(2, 2))  # LIBRARY CALL
    extlib.run(torch.ones(3))  # EXTERNAL LIBRARY
    torch.cuda.is_available()  # CUDA CALL
    torch.ones(2, 2).mm(torch.ones(2, 2))  # static
    torch.from_numpy(numpy.zeros(3))  # FROM NUMPY
    lstm(torch.ones(2, 1, 3))  # MODULE CALL
msft_kit.assess_end()
torch.ones(5).cos()  # after the loop: not a step
print("after the loop")
"""

TABLE = {
    "version": "2.13.0",
    "apis": {
        "torch.nn.functional.interpolate": {
            "status": "restricted",
            "restriction": "scale_factor is not supported",
            "dtypes": None,
            "arguments": {"scale_factor": "not supported"},
        },
        "torch.Tensor.exp": {
            "status": "restricted",
            "restriction": "float16 and float32 only",
            "dtypes": ["float16", "float32"],
            "arguments": {},
        },
        "torch.Tensor.mm": {"status": "supported", "restriction": "", "dtypes": None},
        "torch.tanh": {"status": "unsupported", "restriction": "", "dtypes": None},
        "torch.nn.LSTM": {
            "status": "restricted",
            "restriction": "the `dropout` argument is not supported",
            "dtypes": ["float32"],
            "arguments": {"dropout": "not supported", "proj_size": "not supported"},
        },
    },
}


def run_assess(
    tmp: Path, loop: int, steps: int, table: bool = True
) -> tuple[subprocess.CompletedProcess[str], Path, str]:
    """The script above (``loop`` iterations) run with ``steps`` steps to record, from its own
    folder, the kit files (and msft_ops.json when ``table``) beside msft_kit.py."""
    kit, project = tmp / "kit", tmp / "project"
    kit.mkdir()
    (project / "site-packages" / "fakelib").mkdir(parents=True)
    (project / "site-packages" / "fakelib" / "__init__.py").write_text(LIBRARY)
    for name in ASSESS_RUNTIME:
        shutil.copy(KITS / name, kit / name)
    (kit / "extlib").mkdir()  # on PYTHONPATH, in no site-packages folder (a source checkout)
    (kit / "extlib" / "__init__.py").write_text(
        "import torch\n\n\ndef run(x):\n    return x.sinh()\n"
    )
    if table:
        (kit / "msft_ops.json").write_text(json.dumps(TABLE))
    script = textwrap.dedent(TRAIN).replace("STEPS", str(loop))
    (project / "train.py").write_text(script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MSFT_")}
    env.update(PYTHONPATH=str(kit), MSFT_ASSESS_STEPS=str(steps), CUDA_VISIBLE_DEVICES="")
    result = subprocess.run(
        [sys.executable, "train.py"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return result, project / "assess", script


def read_rows(path: Path) -> dict[str, dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return {row["API"]: row for row in csv.DictReader(fh)}


def line_of(script: str, marker: str) -> int:
    return next(i for i, text in enumerate(script.splitlines(), 1) if marker in text)


@pytest.fixture(scope="module")
def three_steps(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, str]:
    result, folder, script = run_assess(tmp_path_factory.mktemp("assess"), loop=100, steps=3)
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr, folder, script


@TORCH
def test_the_run_stops_after_the_steps_with_the_summary(three_steps: tuple[str, Path, str]) -> None:
    output, folder, _ = three_steps
    assert "after the loop" not in output
    rows = read_rows(folder / "ops.csv")
    dynamic = sum(row["Dynamic"] == "yes" for row in rows.values())
    summary = (
        f"assess: {len(rows)} APIs in 3 steps ({dynamic} with dynamic shapes, 1 unsupported, "
        "3 restricted and hit on the NPU): assess/ops.csv"
    )
    assert summary in output
    assert rows["torch.nn.functional.interpolate"]["Calls"] == "3"  # one a step, 3 steps
    assert list(next(iter(rows.values()))) == [
        "API", "Calls", "Dtypes", "Arguments", "Shapes", "Dynamic", "NPU", "Where"
    ]  # fmt: skip
    assert rows["torch.nn.functional.interpolate"]["Arguments"] == "scale_factor"


@TORCH
def test_shapes_that_change_between_steps_are_dynamic(three_steps: tuple[str, Path, str]) -> None:
    _, folder, _ = three_steps
    rows = read_rows(folder / "ops.csv")
    matmul, mask = rows["torch.Tensor.matmul"], rows["torch.Tensor.__getitem__"]
    assert matmul["Dynamic"] == "yes"
    assert "(3, 4), (4, 3) -> (3, 3)" in matmul["Shapes"]
    assert mask["Dynamic"] == "yes"  # same input shapes, the output's changes with the data
    assert mask["Dtypes"] == "bool, float32"
    assert rows["torch.Tensor.clone"]["Shapes"] == "[(9,) -> (9,)]; [(2,) -> (2,)]; [(7,) -> (7,)]"
    assert rows["torch.Tensor.size"]["Dynamic"] == "no"  # metadata: no kernel, no compile
    assert "(1, 4)" in rows["torch.Tensor.size"]["Shapes"]
    for name in (
        "torch.Tensor.clone",
        "torch.Tensor.mm",
        "torch.nn.functional.interpolate",
        "torch.tanh",
    ):
        assert rows[name]["Dynamic"] == "no", name
    order = [row["Dynamic"] for row in rows.values()]
    assert order == sorted(order, reverse=True)  # the dynamic ones first


@TORCH
def test_the_npu_column_says_which_restrictions_are_hit(three_steps: tuple[str, Path, str]) -> None:
    _, folder, _ = three_steps
    rows = read_rows(folder / "ops.csv")
    interpolate = rows["torch.nn.functional.interpolate"]["NPU"]
    assert interpolate == "restricted (hit: scale_factor): scale_factor is not supported"
    exp = rows["torch.Tensor.exp"]
    assert (exp["Dtypes"], exp["NPU"]) == (
        "float64", "restricted (hit: dtype float64): float16 and float32 only"
    )  # fmt: skip
    assert rows["torch.Tensor.mm"]["NPU"] == "supported"
    assert rows["torch.tanh"]["NPU"] == "unsupported"
    # the module the table names: its constructor's dropout hits (torch.lstm, which
    # nn.LSTM.forward calls, is a row of its own, not in the table)
    lstm = rows["torch.nn.LSTM"]
    got = (lstm["Calls"], lstm["Arguments"], lstm["Dtypes"])
    assert got == ("3", "dropout, num_layers", "float32")
    assert lstm["NPU"] == "restricted (hit: dropout): the `dropout` argument is not supported"
    assert rows["torch.lstm"]["NPU"] == "supported"
    assert rows["torch.Tensor.gt"]["NPU"] == "supported"  # not listed: not documented as either


@TORCH
def test_where_names_the_project_line_and_the_library(three_steps: tuple[str, Path, str]) -> None:
    _, folder, script = three_steps
    rows = read_rows(folder / "ops.csv")
    library = line_of(script, "LIBRARY CALL")
    assert rows["torch.tanh"]["Where"] == f"train.py:{library} (fakelib)"
    external = line_of(script, "EXTERNAL LIBRARY")
    assert rows["torch.Tensor.sinh"]["Where"] == f"train.py:{external} (extlib)"
    assert rows["torch.Tensor.mm"]["Where"] == f"train.py:{line_of(script, '# static')}"
    numpy = rows["torch.from_numpy"]  # not routed through the mode: wrapped
    assert (numpy["Calls"], numpy["Where"]) == ("3", f"train.py:{line_of(script, 'FROM NUMPY')}")
    cuda = read_rows(folder / "cuda_calls.csv")
    assert cuda["torch.cuda.is_available"] == {
        "API": "torch.cuda.is_available",
        "Calls": "3",
        "Where": f"train.py:{line_of(script, 'CUDA CALL')}",
    }


@TORCH
def test_the_page_escapes_and_lists_dynamic_apis_first(three_steps: tuple[str, Path, str]) -> None:
    _, folder, _ = three_steps
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert " -> " not in page and "(3, 4), (4, 3) -&gt; (3, 3)" in page
    assert page.index("Dynamic shapes") < page.index("Unsupported") < page.index("other APIs")


@TORCH
def test_a_loop_that_ends_early_is_reported_at_exit(tmp_path: Path) -> None:
    """The loop's 2 steps of the 5 asked: the recording pauses at the loop's end (the call
    after the loop is not a step's) and the summary says the loop ended early."""
    result, folder, _ = run_assess(tmp_path, loop=2, steps=5, table=False)
    assert result.returncode == 0, result.stderr
    assert "after the loop" in result.stdout
    assert "APIs in 2 steps (" in result.stderr
    assert "on the NPU); the loop ended before step 2 of the 5 asked: " in result.stderr
    rows = read_rows(folder / "ops.csv")
    assert rows["torch.nn.functional.interpolate"]["Calls"] == "2"
    assert "torch.Tensor.cos" not in rows
    assert {row["NPU"] for row in rows.values()} == {"unknown"}  # no msft_ops.json


EPOCHS = """
import torch
import msft_kit

for epoch in range(3):
    msft_kit.assess_begin()
    for step in range(2):
        msft_kit.assess_tick()
        torch.ones(epoch + 1).sin()
    msft_kit.assess_end()
    torch.ones(9).cos()  # an evaluation between epochs: no step's
"""


@TORCH
def test_the_next_epoch_resumes_the_recording(tmp_path: Path) -> None:
    kit = tmp_path / "kit"
    kit.mkdir()
    for name in ASSESS_RUNTIME:
        shutil.copy(KITS / name, kit / name)
    (tmp_path / "train.py").write_text(EPOCHS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MSFT_")}
    env.update(PYTHONPATH=str(kit), MSFT_ASSESS_STEPS="5", CUDA_VISIBLE_DEVICES="")
    result = subprocess.run(
        [sys.executable, "train.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "APIs in 5 steps (" in result.stderr  # epochs 0, 1 and the first step of 2
    rows = read_rows(tmp_path / "assess" / "ops.csv")
    assert rows["torch.Tensor.sin"]["Calls"] == "5"
    assert rows["torch.Tensor.sin"]["Dynamic"] == "yes"  # (1,) (2,) (3,): one a step
    assert "torch.Tensor.cos" not in rows


def test_the_kit_files_import_without_torch(tmp_path: Path) -> None:
    code = "import sys; sys.modules['torch'] = None; import msft_kit, msft_assess; print('ok')"
    env = dict(os.environ, PYTHONPATH=str(KITS))
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert result.stdout.strip() == "ok", result.stderr


def test_only_dtypes_of_a_listed_kind_hit_a_dtype_restriction() -> None:
    verdict = msft_assess_report.npu_verdict
    dtypes = {"float32", "int64", "bool"}
    entry: dict[str, object] = {"status": "restricted", "restriction": ""}
    entry["dtypes"] = ["float16", "float32"]
    assert verdict(dtypes, set(), entry) == "restricted (not hit)"
    dtypes.add("bfloat16")
    assert verdict(dtypes, set(), entry) == "restricted (hit: dtype bfloat16)"
    entry["arguments"] = {"scale_factor": "not supported"}
    assert verdict(dtypes, {"size"}, entry) == "restricted (hit: dtype bfloat16)"


def test_an_api_made_inside_a_function_is_named_as_torch_names_it() -> None:
    """F.max_pool2d is boolean_dispatch's inner ``fn`` (its qualname has ``<locals>``): it is
    recorded under its own name, so its restriction in msft_ops.json is found (it was recorded
    as ``boolean_dispatch.<locals>.fn``, one row for every such function)."""
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    assert msft_assess.api_name(functional.max_pool2d) == "torch.nn.functional.max_pool2d"
    assert (
        msft_assess.api_name(functional.adaptive_max_pool2d)
        == "torch.nn.functional.adaptive_max_pool2d"
    )


def test_a_default_passed_on_by_a_module_is_no_argument() -> None:
    """nn.MaxPool2d passes ``dilation=1`` on to F.max_pool2d, boolean_dispatch's ``fn``
    (``*args, **kwargs``): the default of the function it dispatches to, not an argument
    given (timm's resnet showed max_pool2d as "restricted (hit: dilation)")."""
    torch = pytest.importorskip("torch")
    pool = torch.nn.functional.max_pool2d
    given = msft_assess._given(pool, {"stride": 2, "padding": 1, "dilation": 1, "ceil_mode": False})
    assert "dilation" not in given and "ceil_mode" not in given
    assert "dilation" in msft_assess._given(pool, {"dilation": 2})


def _api(steps: dict[int, set[str]], name: str = "torch.Tensor.add_") -> msft_assess_report.Api:
    api = msft_assess_report.Api(name)
    api.steps = steps
    return api


def test_dynamic_means_a_later_step_brings_a_new_shape() -> None:
    """LBFGS's step 0 calls add_ with more shapes than its later steps: a subset compiles
    nothing new (time_sequence_prediction showed Dynamic=yes); an API first called at step 3
    brings no new shape either; a growing batch or a mask does."""
    assert not _api({0: {"a", "b"}, 1: {"a"}, 2: {"a"}}).dynamic()
    assert not _api({3: {"a"}, 4: {"a"}}).dynamic()
    assert not _api({-1: {"x"}, 0: {"a"}, 1: {"a"}}).dynamic()  # the loop's header: no step
    assert _api({0: {"a"}, 1: {"b"}}).dynamic()
    assert _api({0: {"a"}, 1: {"a"}, 2: {"a", "c"}}).dynamic()
    assert not _api({0: {"a"}, 1: {"b"}}, "torch.Tensor.size").dynamic()  # no kernel


def test_shapes_of_many_tensors_are_counted_and_a_nested_one_is_named() -> None:
    torch = pytest.importorskip("torch")
    many = [torch.ones(3, 1)] * 1039 + [torch.ones(2)]
    assert msft_assess._shape(many) == "(3, 1) x1039, (2,)"
    with warnings.catch_warnings():  # (torch says the nested tensors are a prototype)
        warnings.simplefilter("ignore")
        nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    assert msft_assess._shape([nested]) == "(nested)"
    assert len(msft_assess._shape([torch.ones(i + 1) for i in range(200)])) == 300
