"""-r (user rules: validation and application), -s, -sim, and all three on one project."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from openpyxl import load_workbook

from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.errors import UserError
from ms_fmk_transplt.tables.user_rule_file import load_user_rules

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "rules" / "examples"
LEGACY = ROOT / "fixtures" / "projects" / "legacy_gpu"


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.json")))
def test_examples_are_valid(example: str) -> None:
    rules = load_user_rules(str(EXAMPLES / example))
    assert rules.args or rules.funcs or rules.modules


BAD_RULES = [
    ('{"rules": {"ArgsModifyRule": [', "line 1 column 31: invalid JSON (Expecting value)"),
    (
        '{"rules": {"FooRule": [{"a": 1}]}}',
        "$.rules.FooRule: unknown rule kind (expected one of ArgsModifyRule, FuncNameModifyRule, "
        "ModuleNameModifyRule)",
    ),
    (
        '{"rules": {"FuncNameModifyRule": [{"old_name": "a"}]}}',
        "$.rules.FuncNameModifyRule[0]: missing field 'new_name'",
    ),
    (
        '{"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": "0", "arg_new": "1"}]}}',
        '$.rules.ArgsModifyRule[0].arg_idx: must be integer, got "0"',
    ),
    (
        '{"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": -1, "arg_new": "1"}]}}',
        "$.rules.ArgsModifyRule[0].arg_idx: must be >= 0",
    ),
    (
        '{"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": 0, "arg_new": "a +"}]}}',
        '$.rules.ArgsModifyRule[0].arg_new: "a +" is not a Python expression',
    ),
    (
        '{"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_new": "1"}]}}',
        "$.rules.ArgsModifyRule[0]: needs 'arg_idx' (position) or 'arg_name' (keyword)",
    ),
    (
        '{"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": 0}]}}',
        "$.rules.ArgsModifyRule[0]: needs exactly one of 'arg_new' (new value) or 'delete': true",
    ),
    (
        '{"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": 0, "arg_new": "1", '
        '"delete": true}]}}',
        "$.rules.ArgsModifyRule[0]: needs exactly one of 'arg_new' (new value) or 'delete': true",
    ),
    ('{"rules": {"FuncNameModifyRule": []}}', "$.rules.FuncNameModifyRule: empty rule list"),
    ('{"rules": {}}', "$.rules: no rules"),
    ('{"rulez": {}}', "$.rulez: unknown field"),
    (
        '{"rules": {"FuncNameModifyRule": [{"old_name": "a b", "new_name": "c"}]}}',
        '$.rules.FuncNameModifyRule[0].old_name: "a b" is not a (dotted) Python name',
    ),
    (
        '{"rules": {"ModuleNameModifyRule": [{"old_name": "amp", "new_name": "x", '
        '"parent_module": 3}]}}',
        "$.rules.ModuleNameModifyRule[0].parent_module: must be string, got 3",
    ),
    (
        '{"rules": {"FuncNameModifyRule": [{"old_name": "a", "new_name": "b", "extra": 1}]}}',
        "$.rules.FuncNameModifyRule[0].extra: unknown field",
    ),
    ("[1, 2]", "$: must be object, got [1, 2]"),
]


@pytest.mark.parametrize(("text", "message"), BAD_RULES)
def test_bad_rule_file(tmp_path: Path, text: str, message: str) -> None:
    rule_file = tmp_path / "rules.json"
    rule_file.write_text(text)
    with pytest.raises(UserError) as info:
        load_user_rules(str(rule_file))
    assert str(info.value) == f"{rule_file}: {message}"
    # through the CLI: one line, exit 2, nothing written
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["-i", str(LEGACY), "-o", str(out), "-r", str(rule_file)])
    assert result.exit_code == 2
    assert result.output.strip() == f"ms_fmk_transplt: error: {rule_file}: {message}"
    assert not out.exists()


def test_missing_and_huge_rule_files(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="rule file does not exist"):
        load_user_rules(str(tmp_path / "nope.json"))
    huge = tmp_path / "huge.json"
    huge.write_bytes(b" " * (10 * 1024 * 1024 + 1))
    with pytest.raises(UserError, match="larger than 10 MiB"):
        load_user_rules(str(huge))


def test_all_three_options_on_one_project(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "-i",
            str(LEGACY),
            "-o",
            str(tmp_path),
            "-r",
            str(EXAMPLES / "porting_guide_format.json"),
            "-s",
            "-sim",
        ],
    )
    assert result.exit_code == 0, result.output
    out = tmp_path / "legacy_gpu_msft"
    train = (out / "train.py").read_text()
    changes = rows(out / "change_list.csv")
    fired = {r["Rule"] for r in changes}
    assert {
        "user_rules.ArgsModifyRule",
        "specify_device.helper",
        "similar.nvtx",
        "tensor_methods.cuda_call",
        "amp.cuda_amp",
        "imports.torch_npu",
    } <= fired
    assert "optimizer = torch.optim.SGD(model.parameters(), lr=0.05)" in train  # -r
    assert 'MSFT_NPU_DEVICE = "npu:" + os.environ.get("DEVICE_ID", "0")' in train  # -s
    assert "torch.cuda.nvtx" not in train  # -sim
    similar_rows = [r for r in changes if r["Rule"].startswith("similar.")]
    assert similar_rows and all(r["Message"].startswith("similar: ") for r in similar_rows)
    # without -sim the nvtx calls are open work; with it they are "migrated with a caveat"
    unsupported = {r["OP"] for r in rows(out / "unsupported_op.csv")}
    assert not any(op.startswith("torch.cuda.nvtx") for op in unsupported)
    summary = load_workbook(out / "unsupported_op.xlsx")["Summary"]
    values = {r[0]: r[1] for r in summary.iter_rows(values_only=True) if r and r[0]}
    caveat_rows = sum(1 for r in rows(out / "unsupported_op.csv") if r["Action"] == "caveat")
    env_rows = [r for r in changes if r["Rule"] == "environment.ascend_variable"]
    assert len(env_rows) == 1  # os.environ["CUDA_VISIBLE_DEVICES"]: a caveat change too
    caveats = len(similar_rows) + len(env_rows) + caveat_rows
    split = f"{caveats - caveat_rows} changes, {caveat_rows} rows"
    assert values[f"caveats to check ({split})"] == caveats
    log = (out / "msFmkTranspltlog.txt").read_text()
    assert "[specify_device.rank_risk]" not in log  # legacy_gpu reads no rank


def test_failed_file_is_reported(tmp_path: Path, monkeypatch) -> None:
    import ms_fmk_transplt.run.file_migration as pipeline

    def boom(*args, **kwargs):
        raise RuntimeError("simulated engine bug")

    monkeypatch.setattr(pipeline, "migrate_source", boom)
    result = CliRunner().invoke(main, ["-i", str(LEGACY), "-o", str(tmp_path)])
    assert result.exit_code == 1
    out = tmp_path / "legacy_gpu_msft"
    assert (out / "train.py").read_bytes() == (LEGACY / "train.py").read_bytes()
    failed = [r for r in rows(out / "unsupported_op.csv") if r["Category"] == "failed_file"]
    assert {r["File"] for r in failed} == {"train.py", "legacy_eval.py"}
    log = (out / "msFmkTranspltlog.txt").read_text()
    assert "simulated engine bug" in log and "failed file(s)" in log.splitlines()[-1]


def test_user_rules_run_before_the_builtin_table(tmp_path: Path) -> None:
    """A user rule renaming torch.cuda.amp's module wins over the built-in amp rule."""
    rule_file = tmp_path / "r.json"
    rule_file.write_text(
        json.dumps(
            {
                "rules": {
                    "FuncNameModifyRule": [
                        {
                            "old_name": "torch.cuda.amp.GradScaler",
                            "new_name": "torch.amp.GradScaler",
                        }
                    ]
                }
            }
        )
    )
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "t.py").write_text("import torch\nscaler = torch.cuda.amp.GradScaler()\n")
    result = CliRunner().invoke(
        main, ["-i", str(proj), "-o", str(tmp_path / "o"), "-r", str(rule_file)]
    )
    assert result.exit_code == 0, result.output
    # (the built-in rules see the user rule's result: amp.scaler_device names its device)
    assert 'scaler = torch.amp.GradScaler("npu")' in (tmp_path / "o/p_msft/t.py").read_text()


def test_specify_device_warns_where_the_risk_is_visible() -> None:
    from helpers import case_options, tables_for

    from ms_fmk_transplt.engine import migrate_source

    case = ROOT / "fixtures/rules/specify_device.rank_risk/reads_rank.py"
    options = case_options(case)
    result = migrate_source(case.read_bytes(), case.name, tables_for(case), options)
    warnings = sorted((n.line, n.message.split(":")[0]) for n in result.notices)
    assert warnings == [
        (5, "this file reads a rank"),
        (6, "this file hard-codes several devices (0, 1)"),
    ]
