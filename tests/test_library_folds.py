"""A library whose action is in the library itself counts once per run (issue 46, rule
libraries.cuda_only, entries marked ``per_run`` in rules/libraries.json): coqui's
``trainer.TrainerArgs`` in three or more files is one row naming how many files use it and the
first few, the log lists each; two files keep their rows; an ordinary library row (flash_attn:
each file's calls change) is never folded. The fold is of the run: a sharded run merged and a
warm cache give the rows of a single cold run."""

from __future__ import annotations

import csv
from pathlib import Path

from helpers import tool
from test_shards import log_lines

from ms_fmk_transplt.engine.rules.family_spec import RunFolding
from ms_fmk_transplt.engine.rules.libraries.library_rows import CUDA_ONLY, fold_library_rows
from ms_fmk_transplt.engine.rules.libraries.library_run_folds import fold_library_runs
from ms_fmk_transplt.events import Notice, Severity
from ms_fmk_transplt.tables import load_tables

RECIPE = """import torch
from trainer import Trainer, TrainerArgs


def main(config, model):
    args = TrainerArgs()
    Trainer(args, config, "out", model=model.cuda()).fit()


if __name__ == "__main__":
    main(None, torch.nn.Linear(2, 2))
"""
ATTENTION = """import torch
from flash_attn import flash_attn_func


def attend(q, k, v):
    return flash_attn_func(q, k, v)
"""


def _project(root: Path, recipes: int) -> Path:
    for i in range(recipes):
        folder = root / "recipes" / f"r{i}"
        folder.mkdir(parents=True)
        (folder / "train.py").write_text(RECIPE, encoding="utf-8")
        (folder / "attn.py").write_text(ATTENTION, encoding="utf-8")
    return root


def _rows(out: Path) -> list[dict[str, str]]:
    with (out / "unsupported_op.csv").open(encoding="utf-8") as f:
        return [r for r in csv.DictReader(f) if r["Rule"] == CUDA_ONLY]


def _run(project: Path, out: Path, *more: str) -> None:
    done = tool("-i", str(project), "-o", str(out), "-q", *more)
    assert done.returncode == 0, done.stderr


def test_four_files_of_a_per_run_library_are_one_row(tmp_path: Path) -> None:
    _run(_project(tmp_path / "tts", 4), tmp_path / "o", "--no-cache")
    out = tmp_path / "o" / "tts_msft"
    rows = _rows(out)
    trainer = [r for r in rows if r["OP"] == "trainer.TrainerArgs"]
    assert len(trainer) == 1
    row = trainer[0]
    assert (row["File"], row["Action"]) == ("recipes/r0/train.py", "manual")
    line = row["Start Line"]  # the migrated file's numbering (import torch_npu was inserted)
    assert line == "3"
    assert row["Tips"].startswith(
        f"4 files use trainer (recipes/r0/train.py:{line}, recipes/r1/train.py:{line}, "
        f"recipes/r2/train.py:{line} and 1 more; all in msFmkTranspltlog.txt); the action is "
        "in the library, not in each file: coqui's Trainer (configured by TrainerArgs) picks"
    )
    # an ordinary library row: each file's calls must change, one row per file
    attention = [r for r in rows if r["OP"].startswith("flash_attn")]
    assert sorted(r["File"] for r in attention) == [f"recipes/r{i}/attn.py" for i in range(4)]
    log = (out / "msFmkTranspltlog.txt").read_text(encoding="utf-8").splitlines()
    listed = [entry for entry in log if "one row for the 4 files that use it" in entry]
    assert len(listed) == 1
    assert all(f"recipes/r{i}/train.py:{line}" in listed[0] for i in range(4))
    assert not any("flash_attn" in entry and "files that use it" in entry for entry in log)


def test_two_files_keep_their_rows(tmp_path: Path) -> None:
    _run(_project(tmp_path / "pair", 2), tmp_path / "o", "--no-cache")
    rows = [r for r in _rows(tmp_path / "o" / "pair_msft") if r["OP"] == "trainer.TrainerArgs"]
    assert sorted(r["File"] for r in rows) == ["recipes/r0/train.py", "recipes/r1/train.py"]
    assert all(r["Tips"].startswith("lines 3, 7: coqui's Trainer") for r in rows)


def test_shards_merged_and_warm_cache_give_the_single_cold_run(tmp_path: Path) -> None:
    project = _project(tmp_path / "tts", 4)
    single, parts, cache = tmp_path / "single", tmp_path / "parts", tmp_path / "cache"
    _run(project, single, "--no-cache")
    for i in (1, 2, 3):
        _run(project, parts, "--no-cache", "--shard", f"{i}/3")
    _run(project, parts, "--merge-shards", "3")
    for warm in ("cold", "warm"):
        _run(project, tmp_path / warm, "--cache-dir", str(cache))
    expected = (single / "tts_msft" / "unsupported_op.csv").read_text(encoding="utf-8")
    assert expected.count("trainer.TrainerArgs") == 1
    for out in (parts, tmp_path / "cold", tmp_path / "warm"):
        assert (out / "tts_msft" / "unsupported_op.csv").read_text(encoding="utf-8") == expected
    log = log_lines(single / "tts_msft" / "msFmkTranspltlog.txt", single)
    assert log == log_lines(parts / "tts_msft" / "msFmkTranspltlog.txt", parts)
    assert sum("one row for the 4 files that use it" in entry for entry in log) == 1


def _use(path: str, line: int, api: str, action: str = "manual") -> Notice:
    return Notice(
        path, line, CUDA_ONLY, Severity.WARNING, f"{api} is CUDA-only", api, "third_party",
        action, f"tip of {api}",
    )  # fmt: skip


def test_a_file_s_per_run_uses_are_a_row_apart_from_its_own() -> None:
    """basicsr's models and training pipeline (per_run) and its CUDA extension ops (each
    file's calls change) in one file: two rows, the first naming a per_run entry."""
    table = load_tables().unsupported.libraries
    uses = [
        _use("m.py", 1, "basicsr.train.train_pipeline"),
        _use("m.py", 2, "basicsr.models.build_model"),
        _use("m.py", 3, "basicsr.ops.dcn.ModulatedDeformConvPack"),
    ]
    rows = fold_library_rows(uses, table, migrated=False)
    assert [(r.line, r.api) for r in rows] == [
        (1, "basicsr.train.train_pipeline"),  # (the common prefix, basicsr, is no entry)
        (3, "basicsr.ops.dcn.ModulatedDeformConvPack"),
    ]
    assert table.per_run(rows[0].api) and not table.per_run(rows[1].api)


def test_only_manual_rows_of_per_run_entries_fold() -> None:
    run = RunFolding(load_tables(), migrated=False)
    files = [[_use(f"r{i}.py", 4, "trainer.TrainerArgs")] for i in (2, 0, 1)]
    files += [[_use(f"c{i}.py", 5, "trainer.TrainerArgs", "caveat")] for i in range(3)]
    files += [[_use(f"f{i}.py", 6, "flash_attn.flash_attn_func")] for i in range(3)]
    folded, lines = fold_library_runs(files, run)
    assert [len(rows) for rows in folded] == [0, 1, 0, 1, 1, 1, 1, 1, 1]
    assert folded[1][0].file == "r0.py"  # the first by path
    assert folded[3:] == files[3:]
    assert lines == [
        "r0.py:4: [libraries.cuda_only] trainer: one row for the 3 files that use it (the "
        "action is in the library): r0.py:4, r1.py:4, r2.py:4"
    ]
    assert fold_library_runs(files[:2], run) == (files[:2], [])


def test_a_recipe_setting_in_many_recipes_is_one_row(tmp_path: Path) -> None:
    """``optim: adamw_bnb_8bit`` in four recipe YAMLs (axolotl's examples: 105): one row for
    the run naming how many recipes set it, the log listing each; a setting of two recipes
    (``paged_adamw_8bit``) keeps both rows."""
    project = tmp_path / "recipes"
    for i in range(4):
        folder = project / "examples" / f"m{i}"
        folder.mkdir(parents=True)
        extra = "\n" * i  # the setting at another line of each recipe
        (folder / "qlora.yaml").write_text(f"{extra}base_model: m\noptim: adamw_bnb_8bit\n")
        if i < 2:
            (folder / "lora.yaml").write_text("optim: paged_adamw_8bit\n")
    (project / "train.py").write_text(RECIPE, encoding="utf-8")
    out = tmp_path / "o"
    _run(project, out, "--no-cache")
    rows = [r for r in _rows(out / "recipes_msft") if r["File"].endswith(".yaml")]
    folded = [r for r in rows if "adamw_bnb_8bit" in r["OP"]]
    assert len(folded) == 1
    assert folded[0]["File"] == "examples/m0/qlora.yaml"
    assert folded[0]["Tips"].startswith("4 recipe files set it (examples/m0/qlora.yaml:2, ")
    assert len([r for r in rows if "paged_adamw_8bit" in r["OP"]]) == 2
    log = log_lines(out / "recipes_msft" / "msFmkTranspltlog.txt", out)
    listed = [line for line in log if "one row for the 4 recipe files that set it" in line]
    assert len(listed) == 1
    assert all(f"examples/m{i}/qlora.yaml:{i + 2}" in listed[0] for i in range(4))
