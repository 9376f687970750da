"""unsupported_op.xlsx / .csv read back as a user (or CI) would, and the analysis-only mode."""

from __future__ import annotations

import csv
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from openpyxl import load_workbook
from required_tools import needs_tool

from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.commands.rule_docs import all_rules
from ms_fmk_transplt.report.unsupported_op import HEADER
from ms_fmk_transplt.tables import load_tables

RULES = all_rules()
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LEGACY = FIXTURES / "projects" / "legacy_gpu"


def migrate(tmp_path: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["-i", str(LEGACY), "-o", str(tmp_path), *extra])
    return result.exit_code, result.output


def csv_rows(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh))


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    code, text = migrate(tmp)
    assert code == 0, text
    return tmp / "legacy_gpu_msft"


def test_workbook_rows_match_csv_and_golden(out: Path) -> None:
    wb = load_workbook(out / "unsupported_op.xlsx")
    assert wb.sheetnames == ["Unsupported", "Summary", "Advice"]
    ws = wb["Unsupported"]
    sheet = [["" if v is None else str(v) for v in row] for row in ws.iter_rows(values_only=True)]
    assert tuple(sheet[0]) == HEADER
    *sheet, total = sheet  # a totals row closes the sheet
    assert ws["B1"].alignment.horizontal == "right" == ws["B2"].alignment.horizontal  # numbers
    assert ws["F2"].alignment.wrap_text and ws["F2"].alignment.vertical == "top"  # long tips
    assert total[0] == f"Total: {len(sheet) - 1} rows" and total[6].endswith(" manual")
    # the CSV has the documented wording of a translated tip (the sheet: a note on the tip)
    assert sheet == [r[:6] + r[7:] for r in csv_rows(out / "unsupported_op.csv")]
    golden = csv_rows(FIXTURES / "expected" / "legacy_gpu_msft" / "unsupported_op.csv")
    assert sheet == [r[:6] + r[7:] for r in golden]
    assert ws.freeze_panes == "A2"
    assert ws.auto_filter.ref == f"A1:H{len(sheet)}"
    assert ws.column_dimensions["F"].width >= 40  # the tips: wrapped past the cap
    keys = [(r[0], int(r[1])) for r in sheet[1:]]
    assert keys == sorted(keys)


def test_every_category_and_tip(out: Path) -> None:
    rows = csv_rows(out / "unsupported_op.csv")[1:]
    by_op = {r[3]: r for r in rows}
    assert by_op["fused_gelu_kernel.cu"][1:3] == ["1", "14"]
    assert by_op["gelu_math.cuh"][4] == "custom_cuda_code"
    # os.environ["CUDA_VISIBLE_DEVICES"] = ... is an environment key: migrated, not listed
    assert "CUDA_VISIBLE_DEVICES" not in by_op
    changes = csv_rows(out / "change_list.csv")[1:]
    assert [r[5] for r in changes if "ASCEND_RT_VISIBLE_DEVICES" in r[7]] == [
        "environment.ascend_variable"
    ]
    assert by_op["torch.nn.DataParallel"][4:] == [
        "data_parallel",
        "DataParallel is not supported on the NPU: use DistributedDataParallel with one process "
        "per NPU (ms_fmk_transplt ... distributed -m MAIN)",
        "",  # no documented wording of another language
        "manual",
        "unsupported.data_parallel",
    ]
    assert by_op["torch.backends.cudnn.benchmark"][7] == "caveat"
    assert by_op["(whole file)"][0] == "legacy_eval.py"
    assert by_op["(whole file)"][4] == "skipped_file"
    assert {r[4] for r in rows} == {
        "custom_cuda_code",
        "skipped_file",
        "third_party",
        "backend_switch",
        "data_parallel",
        "cuda_only_api",
    }
    assert all(r[5] for r in rows)
    # nothing the engine migrated is listed (.cuda(), torch.cuda.amp.autocast, apex.amp)
    assert not {r[3] for r in rows} & {"torch.cuda.amp.autocast", "apex.amp", ".cuda"}


def test_summary_sheet(out: Path) -> None:
    ws = load_workbook(out / "unsupported_op.xlsx")["Summary"]
    values = {row[0]: row[1] for row in ws.iter_rows(values_only=True) if row and row[0]}
    rows = csv_rows(out / "unsupported_op.csv")[1:]
    changes = [r for r in csv_rows(out / "change_list.csv")[1:] if r[5] != "imports.torch_npu"]
    caveat_changes = sum(1 for r in changes if RULES[r[5]].caveat)
    caveats = sum(1 for r in rows if r[7] == "caveat")
    assert caveat_changes == 1  # the environment key
    assert values["needs manual work (manual rows, sheet Unsupported)"] == len(rows) - caveats
    assert values["caveat rows (sheet Unsupported)"] == caveats
    assert values["  of them with a caveat"] == caveat_changes
    assert values["changes (change_list.csv rows)"] == len(csv_rows(out / "change_list.csv")) - 1
    total = len(changes) + len(rows)
    assert values["CUDA-specific items (changes - bookkeeping - option edits + rows)"] == total
    assert values["converted (items - manual)"] == len(changes) + caveats
    assert values["conversion rate (converted / items)"] == pytest.approx(
        (len(changes) + caveats) / total
    )
    assert values["target torch_npu version"] == load_tables().torch_npu_version
    advice = csv_rows(out / "advice.csv")[1:]
    assert values["advice rows (sheet Advice, not counted above)"] == len(advice)
    assert values["data_parallel"] == 1 and values["custom_cuda_code"] == 3
    assert values["torch.cuda.nvtx.range_push"] == "cuda_only_api"  # per-API section


def test_log_and_terminal_show_the_open_work(tmp_path: Path) -> None:
    code, text = migrate(tmp_path)
    assert code == 0
    assert "Top open work" in text and "torch.nn.DataParallel" in text
    log = (tmp_path / "legacy_gpu_msft" / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert "9 need manual work" in log and "% converted (" in log  # apex: one row per file


def test_analyse_writes_reports_only(tmp_path: Path) -> None:
    code, text = migrate(tmp_path, "--analyse")
    assert code == 0, text
    report_dir = tmp_path / "legacy_gpu_analysis"
    assert sorted(p.name for p in report_dir.iterdir()) == [
        "advice.csv",
        "change_list.csv",
        "effort.csv",
        "msFmkTranspltlog.txt",
        "report.html",
        "unsupported_op.csv",
        "unsupported_op.xlsx",
    ]
    assert not (tmp_path / "legacy_gpu_msft").exists()
    rows = csv_rows(report_dir / "unsupported_op.csv")
    # input-file line numbers: DataParallel is on line 27 of the original train.py
    assert ["train.py", "27", "27", "torch.nn.DataParallel"] == rows[
        [r[3] for r in rows].index("torch.nn.DataParallel")
    ][:4]
    assert (LEGACY / "train.py").read_text().splitlines()[26].strip().startswith("model = nn.Data")
    changes = csv_rows(report_dir / "change_list.csv")
    assert any(r[4] == ".cuda() -> .npu()" and r[1] == "21" for r in changes)


@needs_tool("soffice", shutil.which("libreoffice"), "LibreOffice not installed")
def test_libreoffice_opens_the_workbook(out: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            "libreoffice",
            "--headless",
            "--convert-to",
            "csv",
            "--outdir",
            str(tmp_path),
            str(out / "unsupported_op.xlsx"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    converted = csv_rows(tmp_path / "unsupported_op.csv")
    assert converted[0] == list(HEADER)
    assert len(converted) == len(csv_rows(out / "unsupported_op.csv")) + 1  # + the totals row
