"""kits/msft_compare.py (the precision kit's summary) reads what ``msprobe compare`` wrote: the
Result counts of matched rows, the rows only one side has, and the files it refuses. The CSVs
here have the columns mindstudio-probe 26.2.0 writes in its statistics mode."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from ms_fmk_transplt.kits.msft_compare import api_of, main, read_comparison, result_csv

HEADER = (
    "NPU Name,Bench Name,NPU Dtype,Bench Dtype,NPU Tensor Shape,Bench Tensor Shape,"
    "NPU Requires_grad,Bench Requires_grad,Max diff,Min diff,Mean diff,L2norm diff,"
    "MaxRelativeErr,MinRelativeErr,MeanRelativeErr,NormRelativeErr,NPU max,NPU min,NPU mean,"
    "NPU l2norm,Bench max,Bench min,Bench mean,Bench l2norm,Requires_grad Consistent,Result,"
    "Err_message,NPU_Stack_Info"
).split(",")


def _write(folder: Path, rows: list[tuple[str, str, str]]) -> Path:
    """A compare_result CSV of (NPU Name, Bench Name, Result) rows; the other cells filled."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "compare_result_proc1_20260101000000.csv"
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, HEADER, restval="0")
        writer.writeheader()
        for target, golden, result in rows:
            writer.writerow({"NPU Name": target, "Bench Name": golden, "Result": result})
    return path


def _row(name: str, result: str = "pass") -> tuple[str, str, str]:
    return (name, name, result)


def test_equal_dumps_are_all_pass(tmp_path: Path) -> None:
    _write(
        tmp_path / "out",
        [_row("Functional.linear.0.forward.input.0"), _row("x.0.forward.output.0")],
    )
    found = read_comparison(tmp_path / "out")
    assert found.results == {"pass": 2} and found.rows == 2
    assert not found.differs
    assert found.summary() == "2 rows compared (pass 2); 0 NPU-only, 0 GPU-only: equal"


def test_a_row_not_pass_makes_them_different(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        [
            _row("Functional.linear.0.forward.output.0", "error"),
            _row("Functional.linear.1.backward.output.0", "warning"),
            _row("Functional.relu.0.forward.output.0"),
        ],
    )
    found = read_comparison(path)
    assert found.results == {"error": 1, "warning": 1, "pass": 1}
    assert found.differs
    assert "(error 1, pass 1, warning 1)" in found.summary()


def test_rows_one_side_only_are_counted_apart(tmp_path: Path) -> None:
    """msprobe says ``pass`` on an NPU row without a counterpart, and lists no GPU-only API."""
    step = tmp_path / "gpu" / "step0" / "proc7"
    step.mkdir(parents=True)
    apis = [
        "Functional.linear.0.forward",
        "Tensor.__mul__.0.forward",
        "Functional.linear.0.backward",
    ]
    (step / "dump.json").write_text(
        json.dumps({"framework": "pytorch", "data": dict.fromkeys(apis, {})})
    )
    path = _write(
        tmp_path / "out",
        [
            _row("Functional.linear.0.forward.input.0"),
            ("Tensor.add_.0.forward.output.0", "N/A", "pass"),
            _row("Functional.linear.0.backward.output.2"),
        ],
    )
    found = read_comparison(path, tmp_path / "gpu" / "step0")
    assert found.results == {"pass": 2} and found.rows == 3
    assert found.target_only == ("Tensor.add_.0.forward.output.0",)
    assert found.golden_only == ("Tensor.__mul__.0.forward",)
    assert found.differs
    assert main([str(tmp_path / "out"), str(tmp_path / "gpu" / "step0")]) == 1


@pytest.mark.parametrize(
    ("row", "api"),
    [
        ("Functional.linear.0.forward.input.1", "Functional.linear.0.forward"),
        ("Tensor.add_.3.forward.input.alpha", "Tensor.add_.3.forward"),
        ("Functional.linear.1.backward.output.2", "Functional.linear.1.backward"),
        ("Module.fc.Linear.forward.0.output.0", "Module.fc.Linear.forward.0"),
    ],
)
def test_a_row_belongs_to_its_api_call(row: str, api: str) -> None:
    assert api_of(row) == api


def test_a_folder_must_hold_exactly_one_result(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="0 compare_result"):
        result_csv(tmp_path)
    _write(tmp_path, [])
    (tmp_path / "compare_result_2.csv").write_text(",".join(HEADER) + "\n")
    with pytest.raises(FileNotFoundError, match="2 compare_result"):
        read_comparison(tmp_path)


def test_a_csv_without_the_columns_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "compare_result_1.csv"
    path.write_text("NPU Name,Bench Name,Accuracy Reached or Not\na,a,Yes\n")  # msprobe 8.x
    with pytest.raises(ValueError, match="no column Result"):
        read_comparison(path)


def test_the_command_line_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, [_row("Functional.relu.0.forward.output.0")])
    assert main([str(tmp_path)]) == 0
    assert capsys.readouterr().out.endswith("equal\n")
    assert main([]) == 2
