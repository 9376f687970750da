"""A module the input holds is the project's, whatever its name (issue 43): gpt-neox's own
``megatron/`` package is not Megatron-LM, so no libraries.* row says "install MindSpeed" for it.
The goldens are fixtures/projects/own_package (its own megatron) and megatron_user (the near
misses: megatron_utils.py and tools/megatron/ next to imports of the real megatron)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.scan.project_scan import own_modules

MEGATRON = "from megatron.core import parallel_state\n\nrank = parallel_state.get_rank()\n"


@pytest.mark.parametrize(
    ("paths", "package", "own"),
    [
        (["train.py", "megatron/__init__.py", "megatron/mpu/layers.py"], "", {"train", "megatron"}),
        # a namespace package (no __init__.py) and a folder holding no Python file
        (["megatron/core/model.py", "configs/megatron/a.yaml"], "", {"megatron"}),
        # near misses: a module whose name starts with a library's, a folder below the top
        (["megatron_utils.py", "tools/megatron/convert.py"], "", {"megatron_utils", "tools"}),
        # src/ layout, a folder holding a pyproject.toml / setup.py (and its src/)
        (["src/megatron/a.py", "README.md"], "", {"src", "megatron"}),
        (
            ["third_party/Megatron-LM/setup.py", "third_party/Megatron-LM/megatron/core/a.py"],
            "",
            {"third_party", "setup", "megatron"},
        ),
        (["lib/pyproject.toml", "lib/src/flash_attn/ops.py"], "", {"lib", "src", "flash_attn"}),
        (["sub/deep/megatron/a.py"], "", {"sub"}),
        # the input folder is a package: its own name too; names that are no identifiers: none
        (["__init__.py", "mpu.py", "my-tools/x.py"], "megatron", {"megatron", "mpu"}),
        (["mpu.py"], "megatron", {"mpu"}),
    ],
)
def test_own_modules(paths: list[str], package: str, own: set[str]) -> None:
    assert own_modules(paths, package) == own


def _project(root: Path) -> Path:
    root.mkdir()
    (root / "train.py").write_text(MEGATRON, encoding="utf-8")
    return root


def _rows(out: Path) -> str:
    return (out / "unsupported_op.csv").read_text(encoding="utf-8")


def test_single_file_input_reports_the_library_its_folder_holds(tmp_path: Path) -> None:
    """-i train.py: the input is that file alone, so the megatron/ beside it is not the
    input's and the import is the library's; -i of the folder: the project's own package."""
    src = _project(tmp_path / "proj")
    (src / "megatron").mkdir()
    (src / "megatron" / "__init__.py").write_text("", encoding="utf-8")
    one = CliRunner().invoke(main, ["-q", "-i", str(src / "train.py"), "-o", str(tmp_path / "a")])
    assert one.exit_code == 0, one.output
    assert "megatron.core.parallel_state" in _rows(tmp_path / "a" / "proj_msft")
    whole = CliRunner().invoke(main, ["-q", "-i", str(src), "-o", str(tmp_path / "b")])
    assert whole.exit_code == 0, whole.output
    assert "megatron" not in _rows(tmp_path / "b" / "proj_msft")


def test_a_cached_result_does_not_outlive_the_project_gaining_the_package(tmp_path: Path) -> None:
    """The own modules are in the run's fingerprint: train.py's cached rows are not reused once
    the project holds a megatron/ package (and come back when it is gone)."""
    src = _project(tmp_path / "proj")
    cache = str(tmp_path / "cache")

    def rows(name: str) -> str:
        out = tmp_path / name
        result = CliRunner().invoke(
            main, ["-q", "-i", str(src), "-o", str(out), "--cache-dir", cache]
        )
        assert result.exit_code == 0, result.output
        return _rows(out / "proj_msft")

    assert "megatron.core.parallel_state" in rows("a")
    (src / "megatron").mkdir()
    (src / "megatron" / "core.py").write_text("parallel_state = None\n", encoding="utf-8")
    assert "megatron" not in rows("b")
    (src / "megatron" / "core.py").unlink()
    (src / "megatron").rmdir()
    assert "megatron.core.parallel_state" in rows("c")
