"""Nothing the tool writes goes through a link: every file is created by fs_safety (O_EXCL |
O_NOFOLLOW, or a complete new file renamed over the name), and a link copied from the input
that bears the name of a file the tool writes is replaced or refused, never followed — for
every generated file (reports, launchers, kit files, shard records, the zoo summary)."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import tool

from ms_fmk_transplt.report.names import REPORTS
from ms_fmk_transplt.safety import fs_safety

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ms_fmk_transplt"
TRAIN = ROOT / "fixtures" / "projects" / "precision_pair" / "train.py"
# modules that write files of their own kind, each in its own way:
ALLOWED = {
    "fs_safety.py": "the one place that creates files",
    "cache.py": "its own cache folder, entries made by mkstemp then renamed",
    "inplace_write.py": "--inplace rewrites the user's files, never through a link (tested there)",
    "help_format.py": "click's HelpFormatter.write_text: the help's text, no file",
}
WRITING_ATTRIBUTES = {"write_text", "write_bytes", "symlink_to", "hardlink_to", "touch"}
WRITING_ATTRIBUTES |= {"copy", "copy2", "copyfile", "copytree", "move"}  # shutil's


def _writes(tree: ast.AST) -> list[int]:
    """Lines of calls that create or write a file other than through fs_safety."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in WRITING_ATTRIBUTES:
            lines.append(node.lineno)
        elif isinstance(func, ast.Attribute) and func.attr == "save":  # openpyxl: a path
            if not (node.args and isinstance(node.args[0], ast.Name)):
                lines.append(node.lineno)
            elif node.args[0].id != "buffer":
                lines.append(node.lineno)
        elif (isinstance(func, ast.Name) and func.id == "open") or (
            isinstance(func, ast.Attribute) and func.attr == "open"
        ):
            modes = [a for a in node.args[1:2]] + [
                k.value for k in node.keywords if k.arg == "mode"
            ]
            for mode in modes:
                if isinstance(mode, ast.Constant) and set(str(mode.value)) & set("wax+"):
                    lines.append(node.lineno)
    return lines


def test_every_file_is_written_through_fs_safety() -> None:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in ALLOWED or path.parent.name == "kits":  # kits/: the user's runtime
            continue
        lines = _writes(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            found[str(path.relative_to(ROOT))] = lines
    assert found == {}


def test_the_scan_sees_each_kind_of_write() -> None:
    source = (
        "p.write_text('x')\nq.write_bytes(b'')\nwb.save(path)\nopen(p, 'w')\n"
        "p.open(mode='a')\nwb.save(buffer)\nopen(p)\nshutil.copy2(a, b)\n"
    )
    assert _writes(ast.parse(source)) == [1, 2, 3, 4, 5, 8]


# -- the helpers ---------------------------------------------------------------------------
def test_create_new_refuses_a_link_and_a_file(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "link").symlink_to(victim)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for name in ("link", "dangling"):
        with pytest.raises(FileExistsError):
            fs_safety.create_new(tmp_path / name, b"x")
    with pytest.raises(FileExistsError):
        fs_safety.create_new(victim, b"x")
    assert victim.read_text() == "keep" and not (tmp_path / "nowhere").exists()
    fs_safety.create_new(tmp_path / "fresh", b"new", mode=0o755)
    assert (tmp_path / "fresh").read_bytes() == b"new"
    assert (tmp_path / "fresh").stat().st_mode & 0o777 == 0o755


def test_write_file_replaces_a_link_never_its_target(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "link").symlink_to(victim)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for name in ("link", "dangling"):
        fs_safety.write_text(tmp_path / name, "ours")
        assert not (tmp_path / name).is_symlink()
        assert (tmp_path / name).read_text() == "ours"
    assert victim.read_text() == "keep" and not (tmp_path / "nowhere").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "link", "victim"]


# -- every generated name, through the real command ----------------------------------------
KIT_ROOT = {
    "aoe": ("run_aoe_npu.sh", "KIT_README.md"),
    "profile": ("run_profile_npu.sh", "KIT_README.md"),
    "precision": ("run_precision.sh", "compare.sh", "msft_compare.py", "KIT_README.md"),
}
# each command, the names of the files it writes at its tree's root, and its tree's suffix
RENAMED: dict[tuple[str, ...], tuple[tuple[str, ...], str]] = {
    (): (REPORTS, "_msft"),
    ("--analyse",): ((*REPORTS, "effort.csv"), "_analysis"),
    ("distributed", "-m", "train.py"): ((*REPORTS, "run_distributed_npu.sh"), "_msft"),
    **{
        ("kit", kind, "-m", "train.py"): ((*REPORTS, *names), f"_msft_{kind}")
        for kind, names in KIT_ROOT.items()
    },
}


def _project(tmp_path: Path, names: tuple[str, ...], dangling: bool) -> tuple[Path, list[Path]]:
    """A project whose root holds a link with each of ``names`` to a file outside it (or,
    dangling, to a path nothing holds); returns the project and those outside paths."""
    project = tmp_path / "proj"
    project.mkdir()
    shutil.copy(TRAIN, project / "train.py")
    victims = [tmp_path / "outside" / name for name in names]
    victims[0].parent.mkdir()
    for name, victim in zip(names, victims):
        if not dangling:
            victim.write_text("the user's file\n")
        (project / name).symlink_to(victim)
    return project, victims


def _untouched(victims: list[Path], dangling: bool) -> None:
    for victim in victims:
        if dangling:
            assert not os.path.lexists(victim)
        else:
            assert victim.read_text() == "the user's file\n"


def _cli(project: Path, out: Path, command: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    if command[:1] == ("kit",):  # kit KIND -i -o -m; else -i -o, then options or distributed
        return tool(*command[:2], "-i", str(project), "-o", str(out), *command[2:])
    return tool("-i", str(project), "-o", str(out), *command)


@pytest.mark.parametrize("dangling", [False, True], ids=["link", "dangling"])
@pytest.mark.parametrize("command", RENAMED, ids=[" ".join(c[:2]) or "run" for c in RENAMED])
def test_links_with_the_reports_names_are_kept_and_the_reports_renamed(
    tmp_path: Path, command: tuple[str, ...], dangling: bool
) -> None:
    names, suffix = RENAMED[command]
    project, victims = _project(tmp_path, names, dangling)
    out = tmp_path / "out"
    proc = _cli(project, out, command)
    assert proc.returncode == 0, proc.stderr
    _untouched(victims, dangling)
    tree = out / f"proj{suffix}"
    for name, victim in zip(names, victims):
        stem, _, ext = name.rpartition(".")
        renamed = tree / f"{stem}.msft.{ext}"
        assert renamed.is_file() and not renamed.is_symlink(), (name, sorted(os.listdir(tree)))
        if suffix != "_analysis":  # an analysis copies no file of the project
            assert (tree / name).is_symlink() and os.readlink(tree / name) == str(victim)


REFUSED = {  # a name the tool cannot write under another: the command, the refusal
    "msft_kit.py": (
        ("kit", "aoe", "-m", "train.py"),
        "msft_kit.py: kit aoe -m: a file of the project has the name of the kit's runtime",
    ),
    "msft_shard.json": (
        ("--shard", "1/2"),
        "msft_shard.json: --shard writes each part's records as msft_shard.json",
    ),
}


@pytest.mark.parametrize("dangling", [False, True], ids=["link", "dangling"])
@pytest.mark.parametrize("name", REFUSED)
def test_a_link_named_like_a_file_of_fixed_name_is_refused(
    tmp_path: Path, name: str, dangling: bool
) -> None:
    project, victims = _project(tmp_path, (name,), dangling)
    out = tmp_path / "out"
    command, refusal = REFUSED[name]
    proc = _cli(project, out, command)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and refusal in proc.stderr, proc.stderr
    _untouched(victims, dangling)
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("dangling", [False, True], ids=["link", "dangling"])
def test_a_link_named_like_the_msprobe_config_is_replaced_in_the_copy(
    tmp_path: Path, dangling: bool
) -> None:
    project, victims = _project(tmp_path, ("msprobe_config.json",), dangling)
    out = tmp_path / "out"
    proc = tool("kit", "precision", "-i", str(project), "-o", str(out), "-m", "train.py")
    assert proc.returncode == 0, proc.stderr
    _untouched(victims, dangling)
    for tree in ("proj_msft_precision", "proj_gpu_precision"):
        config = out / tree / "msprobe_config.json"
        assert config.is_file() and not config.is_symlink()
        assert '"task"' in config.read_text()
    log = (out / "proj_msft_precision" / "msFmkTranspltlog.txt").read_text()
    assert "the project's own msprobe_config.json (symbolic link) next to train.py" in log


@pytest.mark.parametrize("dangling", [False, True], ids=["link", "dangling"])
def test_links_in_the_output_folder_are_replaced_by_the_zoo_summary(
    tmp_path: Path, dangling: bool
) -> None:
    zoo = tmp_path / "zoo"
    (zoo / "model_a").mkdir(parents=True)
    shutil.copy(TRAIN, zoo / "model_a" / "train.py")
    out = tmp_path / "out"
    out.mkdir()
    names = ("zoo_zoo_summary.csv", "zoo_zoo_summary.xlsx", "zoo_zoo_report.html")
    victims = []
    for name in names:
        victim = tmp_path / "outside" / name
        victim.parent.mkdir(exist_ok=True)
        if not dangling:
            victim.write_text("the user's file\n")
        (out / name).symlink_to(victim)
        victims.append(victim)
    proc = tool("--zoo", "-i", str(zoo), "-o", str(out), "--overwrite")  # (else refused)
    assert proc.returncode == 0, proc.stderr
    _untouched(victims, dangling)
    for name in names:
        assert (out / name).is_file() and not (out / name).is_symlink()
