"""``[tool.ms_fmk_transplt]`` in pyproject.toml: found upward from the input (or the first
checked path), keys applied, the command line winning, every mistake one line with exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import read_change_list

from ms_fmk_transplt.commands.cli import main

ROOT = Path(__file__).resolve().parent.parent
SOURCE = b"""import torch
x = torch.randn(2).cuda()
torch.cuda.ipc_collect()
"""
TABLE = "[tool.ms_fmk_transplt]\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """proj/pyproject.toml (written by each test) above proj/sub/deep/train.py; proj holds .git
    (the project root: the search upward stops there)."""
    deep = tmp_path / "proj" / "sub" / "deep"
    deep.mkdir(parents=True)
    (tmp_path / "proj" / ".git").mkdir()
    (deep / "train.py").write_bytes(SOURCE)
    return tmp_path / "proj"


def migrate(project: Path, out: Path, *args: str) -> tuple[int, str, str]:
    """Runs the migration of proj/sub/deep; exit code, everything printed, migrated train.py."""
    result = CliRunner().invoke(main, ["-i", str(project / "sub" / "deep"), "-o", str(out), *args])
    migrated = out / "deep_msft" / "train.py"
    text = migrated.read_text(encoding="utf-8") if migrated.exists() else ""
    return result.exit_code, result.output, text


def entry(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real entry point (``python -m ms_fmk_transplt``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MS_FMK_TRANSPLT_CACHE": "off"}
    command = [sys.executable, "-m", "ms_fmk_transplt", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)


def write_config(project: Path, body: str) -> Path:
    path = project / "pyproject.toml"
    path.write_text(f"[project]\nname = 'x'\n\n{TABLE}{body}", encoding="utf-8")
    return path


def test_found_upward_from_a_nested_input_and_ignore_applied(project: Path, tmp_path: Path) -> None:
    write_config(project, 'ignore = ["tensor_methods"]\n')
    code, out, text = migrate(project, tmp_path / "out")
    assert code == 0, out
    assert "x = torch.randn(2).cuda()" in text  # the ignored rule left it
    assert "torch.npu.ipc_collect()" in text  # the others ran
    rules = {
        r["Rule"] for r in read_change_list(tmp_path / "out" / "deep_msft" / "change_list.csv")
    }
    assert "tensor_methods.cuda_call" not in rules and "device_api.npu_namespace" in rules


def test_target_version_applied_and_isolated_reads_no_file(project: Path, tmp_path: Path) -> None:
    write_config(project, 'target-version = "2.1.0"\n')  # 2.1.0 has no torch.npu.ipc_collect
    code, out, text = migrate(project, tmp_path / "a", "-q")
    assert code == 0, out
    assert "torch.cuda.ipc_collect()" in text and ".npu()" in text
    code, out, text = migrate(project, tmp_path / "b", "-q", "--isolated")
    assert code == 0, out
    assert "torch.npu.ipc_collect()" in text


def test_the_command_line_wins(project: Path, tmp_path: Path) -> None:
    """Option by option: -v given wins over target-version, the file's ignore still applies."""
    write_config(project, 'target-version = "2.1.0"\nignore = ["tensor_methods"]\n')
    code, out, text = migrate(project, tmp_path / "a", "-q", "-v", "2.8.0")
    assert code == 0, out
    assert "torch.npu.ipc_collect()" in text and ".cuda()" in text
    code, out, text = migrate(project, tmp_path / "b", "-q", "--ignore", "device_api")
    assert code == 0, out
    assert "torch.cuda.ipc_collect()" in text and ".npu()" in text  # the file's ignore replaced


def test_extend_ignore_is_added_to_ignore(project: Path, tmp_path: Path) -> None:
    write_config(project, 'ignore = ["tensor_methods"]\nextend-ignore = ["device_api"]\n')
    code, out, text = migrate(project, tmp_path / "out", "-q")
    assert code == 0, out
    assert ".cuda()" in text and "torch.cuda.ipc_collect()" in text


def test_max_file_size_applied(project: Path, tmp_path: Path) -> None:
    (project / "sub" / "deep" / "train.py").write_bytes(SOURCE + b"# padding\n" * 200)
    write_config(project, "max-file-size = 0.001\njobs = 1\n")  # 1 KiB
    code, out, text = migrate(project, tmp_path / "out", "-q")
    assert code == 0, out
    assert text.startswith(SOURCE.decode())  # copied unchanged: too large
    code, out, text = migrate(project, tmp_path / "cli", "-q", "--max-file-size", "1")
    assert ".npu()" in text


def test_rule_file_is_relative_to_the_pyproject_folder(project: Path, tmp_path: Path) -> None:
    (project / "rules").mkdir()
    rule = '{"rules": {"FuncNameModifyRule": [{"old_name": "legacy_step", "new_name": "step"}]}}'
    (project / "rules" / "mine.json").write_text(rule, encoding="utf-8")
    (project / "sub" / "deep" / "train.py").write_bytes(SOURCE + b"legacy_step()\n")
    write_config(project, 'rule-file = "rules/mine.json"\n')
    code, out, text = migrate(project, tmp_path / "out", "-q")
    assert code == 0, out
    assert "\nstep()\n" in text and "legacy_step" not in text


def test_verbose_names_the_file_or_says_none(project: Path, tmp_path: Path) -> None:
    config = write_config(project, "jobs = 1\n")
    code, out, _ = migrate(project, tmp_path / "a", "--verbose")
    assert code == 0, out
    assert f"ms_fmk_transplt: configuration: {config} [tool.ms_fmk_transplt]\n" in out
    code, out, _ = migrate(project, tmp_path / "b", "--verbose", "--isolated")
    assert "configuration: none (--isolated" in out
    config.write_text("[tool.ruff]\nline-length = 100\n", encoding="utf-8")  # not ours: passed over
    code, out, _ = migrate(project, tmp_path / "c", "--verbose")
    assert code == 0 and "configuration: none (no pyproject.toml with [tool.ms_fmk_transplt]" in out


def test_nearest_file_with_the_table_counts(project: Path, tmp_path: Path) -> None:
    write_config(project, 'ignore = ["tensor_methods"]\n')
    inner = project / "sub" / "pyproject.toml"  # nearer, but names another tool only
    inner.write_text("[tool.black]\nline-length = 100\n", encoding="utf-8")
    (project / "sub" / "deep" / "pyproject.toml").write_text("not = [toml", encoding="utf-8")
    code, out, text = migrate(project, tmp_path / "out", "-q")
    assert code == 0, out
    assert ".cuda()" in text  # the outer file's ignore


@pytest.mark.parametrize(
    "body, message",
    [
        (
            'targt-version = "2.1.0"\n',
            "unknown key 'targt-version'; did you mean 'target-version'?",
        ),
        ("colour = 1\n", "unknown key 'colour' (known: target-version, select, ignore"),
        ('jobs = "four"\n', "jobs: expected a whole number from 0 to 64 (0: one per core)"),
        ("jobs = -1\n", "jobs: expected a whole number from 0 to 64"),
        ("jobs = 100000\n", "jobs: expected a whole number from 0 to 64 (0: one per core), got"),
        ("jobs = 4.0\n", "jobs: expected a whole number from 0 to 64"),
        ('select = "amp"\n', "select: expected a list of rule ids"),
        ('ignore = ["no_such_family"]\n', "ignore: no_such_family: not a rule id or id prefix"),
        ("todo-comments = 0\n", "todo-comments: expected true or false"),
        ("max-file-size = 0\n", "max-file-size: expected a number of MiB from 0.001 to 256"),
        ("max-file-size = inf\n", "max-file-size: expected a number of MiB from 0.001 to 256"),
        ("max-file-size = nan\n", "max-file-size: expected a number of MiB from 0.001 to 256"),
        ("max-file-size = 1e308\n", "max-file-size: expected a number of MiB from 0.001 to 256"),
        ("max-file-size = 257\n", "max-file-size: expected a number of MiB from 0.001 to 256"),
        ('target-version = "1.8.1"\n', "target-version: '1.8.1' is not a torch_npu version"),
        ("rule-file = 3\n", "rule-file: expected a string"),
    ],
)
def test_a_wrong_key_is_one_line_naming_file_and_key(
    project: Path, tmp_path: Path, body: str, message: str
) -> None:
    config = write_config(project, body)
    code, out, _ = migrate(project, tmp_path / "out")
    assert code == 2
    assert out.count("\n") == 1 and out.startswith(f"ms_fmk_transplt: error: {config}: ")
    assert message in out and "[tool.ms_fmk_transplt]" in out
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "data, message",
    [
        (TABLE.encode() + b'ignore = ["amp"\n', "not valid TOML ("),
        (TABLE.encode() + b"x = " + b"[" * 50_000, "not valid TOML (nested too deeply)"),
        (b"\x00\xff\xfe" + TABLE.encode(), "not UTF-8 text"),
        (TABLE.encode() + b"#" * (1 << 20), "larger than 1 MiB"),
        (b"tool.ms_fmk_transplt = 3\n", "tool.ms_fmk_transplt must be a table"),
    ],
)
def test_a_bad_file_is_one_line_through_the_entry_point(
    project: Path, data: bytes, message: str
) -> None:
    """In the path modes too, and never a traceback."""
    config = project / "pyproject.toml"
    config.write_bytes(data)
    done = entry("--check", str(project / "sub"))
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr
        == f"ms_fmk_transplt: error: {config}: {message}" + done.stderr.split(message, 1)[1]
    )
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stdout == ""


def test_path_modes_use_the_first_paths_config(project: Path) -> None:
    write_config(project, 'ignore = ["tensor_methods"]\nmax-file-size = 0.001\njobs = 1\n')
    done = entry("--check", str(project / "sub" / "deep" / "train.py"), cwd=project.parent)
    assert done.returncode == 1, done.stderr
    assert "device_api.npu_namespace" in done.stdout  # max-file-size, jobs: not used here
    assert "tensor_methods" not in done.stdout
    done = entry("--check", "--isolated", str(project / "sub"), cwd=project.parent)
    assert "tensor_methods.cuda_call" in done.stdout


def test_todo_comments_and_jobs_map_to_their_options(project: Path, tmp_path: Path) -> None:
    from ms_fmk_transplt.commands import config_file
    from ms_fmk_transplt.user_options import option_schema

    path = write_config(project, "todo-comments = false\njobs = 3\n")
    config = config_file.find(project / "sub" / "deep")
    assert config is not None and config.path == path
    ctx = main.make_context("ms_fmk_transplt", ["-i", "x", "-o", "y", "--jobs", "2"])
    params = config_file.apply(ctx, dict(ctx.params), option_schema.RUN, config)
    assert params["no_todo_comments"] is True and params["jobs"] == 2  # given: kept
    ctx = main.make_context("ms_fmk_transplt", ["-i", "x", "-o", "y"])
    params = config_file.apply(ctx, dict(ctx.params), option_schema.RUN, config)
    assert params["jobs"] == 3
    assert config_file.apply(ctx, dict(ctx.params), option_schema.PATHS, config) == ctx.params


@pytest.mark.parametrize(
    "table", ["[tool.ms-fmk-transplt]", "[tool.MS_FMK_TRANSPLT]", "[ms_fmk_transplt]"]
)
def test_a_misnamed_table_is_one_warning_naming_file_and_table(
    project: Path, tmp_path: Path, table: str
) -> None:
    """Was ignored without a word: the run goes on without it (exit 0, the rule it ignores still
    runs), with one warning line naming the file and the table's name; not with -q."""
    config = project / "pyproject.toml"
    config.write_text(f"[project]\nname = 'x'\n\n{table}\nignore = ['tensor_methods']\n")
    done = entry("-i", str(project / "sub" / "deep"), "-o", str(tmp_path / "out"), "--analyse")
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert warnings == [
        f"ms_fmk_transplt: warning: {config}: {table} is not read: the table is "
        "[tool.ms_fmk_transplt]"
    ]
    assert "tensor_methods.cuda_call" in done.stdout  # the misnamed table's ignore did nothing
    done = entry("--check", "-q", str(project / "sub"))
    assert done.returncode == 1 and "warning" not in done.stderr


def test_a_file_naming_the_tool_elsewhere_is_no_warning(project: Path, tmp_path: Path) -> None:
    """Near misses: the tool named as a dependency or in a value, the right table beside them;
    a broken file that names it with a hyphen stays another tool's business (no error)."""
    config = project / "pyproject.toml"
    config.write_text(
        "[project]\nname = 'x'\ndependencies = ['ms-fmk-transplt']\n"
        "[tool.other]\nms-fmk-transplt = 'a key, not a table'\n"
    )
    done = entry("--check", str(project / "sub"))
    assert done.returncode == 1 and "warning" not in done.stderr, done.stderr
    config.write_text(
        f"{TABLE}ignore = ['tensor_methods']\n[tool.other]\nuses = 'ms-fmk-transplt'\n"
    )
    done = entry("--check", str(project / "sub"))
    assert "warning" not in done.stderr and "tensor_methods" not in done.stdout, done.stderr
    config.write_text("[tool.ms-fmk-transplt\nbroken = \n")
    done = entry("--check", str(project / "sub"))
    assert done.returncode == 1 and "warning" not in done.stderr and "error" not in done.stderr
