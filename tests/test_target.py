"""The target torch_npu version (-v): names per version, operator support, advice, effort —
through the CLI, with the reports read back."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from openpyxl import load_workbook

from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.engine import migrate_source
from ms_fmk_transplt.report import advice_csv as advice_report
from ms_fmk_transplt.tables import known_versions, load_tables, resolve_version

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TARGET = FIXTURES / "projects" / "npu_target"
CLEAN = FIXTURES / "projects" / "clean_model"
OPERATOR_CATEGORIES = {"unsupported_op", "restricted_op"}


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_versions_of_the_original_tool_are_known() -> None:
    versions = known_versions()
    assert {"2.1.0", "2.6.0", "2.7.1", "2.8.0"} <= set(versions)
    assert load_tables().torch_npu_version == versions[-1]
    assert resolve_version("2.1.0.post17") == "2.1.0.post17"  # that release's names
    assert resolve_version("2.1") == "2.1.0"
    assert resolve_version("2.6") == "2.6.0"


def test_unknown_version_is_one_line_exit_2(tmp_path: Path) -> None:
    code, out = run("-i", str(TARGET), "-o", str(tmp_path), "-v", "1.8.1")
    assert code == 2
    line = out.strip()
    assert "\n" not in line and "'1.8.1' is not a torch_npu version" in line
    assert "2.1.0" in line and not (tmp_path / "npu_target_msft").exists()


def test_version_and_verbose_flags_keep_their_meaning(tmp_path: Path) -> None:
    code, out = run("--version")
    assert code == 0 and "ms_fmk_transplt" in out
    code, out = run("--verbose", "-i", str(CLEAN), "-o", str(tmp_path), "-v", "2.7.1")
    assert code == 0 and "train.py: changed" in out
    assert "clean_model -> torch_npu 2.7.1: " in out  # the terminal headline names the target


@pytest.mark.parametrize("version", ["2.1.0", "2.3.1", ""])
def test_names_the_target_lacks_are_left_alone(tmp_path: Path, version: str) -> None:
    args = ["-i", str(TARGET), "-o", str(tmp_path), "-q"] + (["-v", version] if version else [])
    code, out = run(*args)
    assert code == 0, out
    root = tmp_path / "npu_target_msft"
    text = (root / "train_lm.py").read_text()
    tables = load_tables(version)
    gaps = [r for r in csv_rows(root / "unsupported_op.csv") if r["Category"] == "version_gap"]
    if "ipc_collect" in tables.npu_names:
        assert "torch.npu.ipc_collect()" in text and not gaps
    else:
        assert "torch.cuda.ipc_collect()" in text
        assert [g["OP"] for g in gaps] == ["torch.cuda.ipc_collect"]
        assert "needs torch_npu >= " in gaps[0]["Tips"]
    log = (root / "msFmkTranspltlog.txt").read_text()
    assert f"target: torch_npu {tables.torch_npu_version} " in log
    summary = load_workbook(root / "unsupported_op.xlsx")["Summary"]
    assert ["target torch_npu version", tables.torch_npu_version] in [
        list(r[:2]) for r in summary.iter_rows(values_only=True)
    ]


def test_json_report_names_the_target(tmp_path: Path) -> None:
    code, out = run("-i", str(CLEAN), "-o", str(tmp_path), "--report-format", "json", "-v", "2.8")
    assert code == 0
    assert json.loads(out)["target_version"] == "2.8.0"


@pytest.mark.parametrize("version", known_versions())
def test_a_plain_training_script_has_no_operator_rows(version: str) -> None:
    source = (CLEAN / "train.py").read_bytes()
    result = migrate_source(source, "train.py", load_tables(version))
    assert result.events  # it is migrated (.cuda(), device strings)
    assert not [n for n in result.notices if n.category in OPERATOR_CATEGORIES]
    assert not [n for n in result.notices if n.open_work]


def test_advice_has_its_own_sheet_and_csv(tmp_path: Path) -> None:
    code, out = run("-i", str(TARGET), "-o", str(tmp_path), "-q")
    assert code == 0, out
    root = tmp_path / "npu_target_msft"
    advice = csv_rows(root / "advice.csv")
    assert advice and all(r["Kind"] in ("performance", "precision", "environment") for r in advice)
    assert all(r["Advice"] and r["Expected effect"] and r["Documented in"] for r in advice)
    wb = load_workbook(root / "unsupported_op.xlsx")
    assert wb.sheetnames == ["Unsupported", "Summary", "Advice"]
    sheet = [
        ["" if v is None else str(v) for v in row]
        for row in wb["Advice"].iter_rows(values_only=True)
    ]
    assert tuple(sheet[0]) == advice_report.HEADER
    assert sheet[1:-1] == [list(r.values()) for r in advice]
    assert sheet[-1][0] == f"Total: {len(advice)} rows"
    kinds = {r["Category"] for r in csv_rows(root / "unsupported_op.csv")}
    assert not kinds & {"performance", "precision"}  # never mixed with must-fix work


def test_analyse_sizes_the_work(tmp_path: Path) -> None:
    code, out = run("-i", str(TARGET), "-o", str(tmp_path), "--analyse", "-q")
    assert code == 0, out
    rows = csv_rows(tmp_path / "npu_target_analysis" / "effort.csv")
    by_path = {(r["Scope"], r["Path"]): r for r in rows}
    file_row = by_path[("file", "train_lm.py")]
    project = by_path[("folder", "(project)")]
    assert file_row["Effort"] in ("low", "medium", "high")
    for column in ("Automatic", "Caveat", "Manual", "Advice"):
        assert project[column] == file_row[column]
    assert int(file_row["Advice"]) > 0 and int(file_row["Automatic"]) > 0
    wb = load_workbook(tmp_path / "npu_target_analysis" / "unsupported_op.xlsx")
    assert "Effort" in wb.sheetnames


def test_a_post_release_given_explicitly_targets_its_names() -> None:
    """-v 2.1.0.post17 is that release: torch.npu.MemPool arrived in 2.1.0.post12, so it is
    there (it said "upgrade to 2.1.0.post12" to a user on post17); -v 2.1.0 targets every
    2.1.0 release and -v 2.1.0.post11 one that lacks it."""
    from ms_fmk_transplt.engine.migrate import migrate_source

    source = b"import torch\npool = torch.cuda.MemPool()\n"
    got = {}
    for version in ("2.1.0", "2.1.0.post11", "2.1.0.post17"):
        result = migrate_source(source, "t.py", load_tables(resolve_version(version)))
        rows = [n.tip for n in result.notices if n.category == "version_gap"]
        got[version] = (b"torch.npu.MemPool()" in result.output, rows)
    assert got["2.1.0.post17"] == (True, [])
    for version in ("2.1.0", "2.1.0.post11"):
        migrated, rows = got[version]
        assert not migrated and len(rows) == 1 and "needs torch_npu >= 2.1.0.post12" in rows[0]
    assert "targets 2.1.0.post11," in got["2.1.0.post11"][1][0]
    assert "targets every 2.1.0 release" in got["2.1.0"][1][0]
