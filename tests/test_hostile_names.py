"""Issue 42: names from the input never become code in what the tool writes. A project folder and
a -m file named with ``$(...)``, backticks, quotes, a newline, a CR, an escape sequence, spaces,
``#``, markup or a byte that is not UTF-8 go through the run, distributed, every kit (precision:
both trees) and --zoo; each generated script passes ``bash -n`` and shellcheck, and run with
stand-ins (PYTHON, aoe and msprobe record their arguments) it runs nothing injected (no PWNED file
anywhere) and hands the script's exact path over as one argument; the TF profile launcher's
PROFILING_OPTIONS is JSON naming the exact folder; HTML shows the markup as text; a kit's refusal
shows the name escaped. The templates themselves are run with every name as -m too."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from required_tools import need_tool
from script_stand_ins import (
    TRAINING_SCRIPT,
    assert_same_file,
    recorded_calls,
    run_script,
    stand_ins,
)

from ms_fmk_transplt.commands.cli import main as run_main
from ms_fmk_transplt.commands.kit_cli import kit
from ms_fmk_transplt.report import kit_launchers, launch_script

NAMES = {
    "dollar": b"p$(touch PWNED)",
    "backticks": b"p`touch PWNED`",
    "quotes": b'bob\'s "model"',
    "newline": b"new\ntouch PWNED\n#",
    "space_hash": b"sp ace #x; touch PWNED",
    "control": b"cr\r\x1b[31m<img src=x onerror=alert(1)>&amp;",
    "placeholder": b"__MAIN_QUOTED__$(touch PWNED)",
    "not_utf8": b"bad\xff\xfebyte",
}
TORCH = TRAINING_SCRIPT.encode()
TF = b"""import tensorflow as tf

with tf.compat.v1.Session() as sess:
    for _ in range(3):
        sess.run(tf.constant(1.0))
"""


def _path(parent: Path, name: bytes) -> Path:
    return Path(os.fsdecode(os.path.join(os.fsencode(parent), name)))


def _project(root: Path, name: bytes, main: str, tf: str) -> Path:
    """The project folder ``name`` holding ``main`` and ``tf``; skipped where the file system
    refuses the name."""
    project = _path(root, name)
    try:
        project.mkdir(parents=True)
        (project / main).write_bytes(TORCH)
    except (OSError, UnicodeEncodeError) as exc:
        pytest.skip(f"the file system refuses the name: {exc}")
    (project / tf).write_bytes(TF)
    return project


def _ok(result: Result) -> None:
    assert result.exit_code == 0, result.output


def _generate(project: Path, out: Path, main: str, tf: str) -> None:
    """The plain run, distributed, the three kits and the TF profile kit, each into its folder."""
    runner, src = CliRunner(), str(project)
    _ok(runner.invoke(run_main, ["-q", "--no-cache", "-i", src, "-o", str(out / "run")]))
    dist = ["-q", "--no-cache", "-i", src, "-o", str(out / "dist"), "distributed"]
    _ok(runner.invoke(run_main, [*dist, "-m", main, "-t", "model"]))
    for kind, script in (("aoe", main), ("profile", main), ("precision", main), ("profile", tf)):
        where = str(out / ("tf" if script == tf else kind))
        _ok(runner.invoke(kit, [kind, "-q", "--no-cache", "-i", src, "-o", where, "-m", script]))


def _lint(scripts: list[Path]) -> None:
    for script in scripts:
        proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert proc.returncode == 0, (script, proc.stderr)
        assert "\r" not in script.read_text(encoding="utf-8")  # valid UTF-8, no raw CR
    shellcheck = shutil.which("shellcheck")
    need_tool("shellcheck", shellcheck, "shellcheck not installed")
    proc = subprocess.run([str(shellcheck), *map(str, scripts)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def _mains(name: bytes) -> tuple[str, str]:
    """The -m script and the TF script: named after ``name``."""
    return os.fsdecode(name + b".py"), os.fsdecode(name + b"_tf.py")


@pytest.mark.parametrize("name", NAMES.values(), ids=NAMES.keys())
def test_every_generated_script_runs_nothing_from_a_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: bytes
) -> None:
    monkeypatch.chdir(tmp_path)  # an injected `touch PWNED` at generation time would land here
    main, tf = _mains(name)
    project = _project(tmp_path / "in", name, main, tf)
    out = tmp_path / "out"
    _generate(project, out, main, tf)
    stem, scripts = project.name, sorted(out.rglob("*.sh"))
    assert len(scripts) == 7, scripts  # distributed, aoe, profile, TF profile, 2 precision, compare
    _lint(scripts)
    env = stand_ins(tmp_path)
    trees = {
        "dist": out / "dist" / f"{stem}_msft",
        "aoe": out / "aoe" / f"{stem}_msft_aoe",
        "profile": out / "profile" / f"{stem}_msft_profile",
        "gpu": out / "precision" / f"{stem}_gpu_precision",
        "npu": out / "precision" / f"{stem}_msft_precision",
    }
    launchers = {
        "dist": "run_distributed_npu.sh",
        "aoe": "run_aoe_npu.sh",
        "profile": "run_profile_npu.sh",
        "gpu": "run_precision.sh",
        "npu": "run_precision.sh",
    }
    for key, launcher in launchers.items():
        run_script(trees[key] / launcher, env, tmp_path)
        (python,), tools = recorded_calls(env)
        assert len(python) == 1, python  # the script, as one argument; no argument of ours
        assert_same_file(python[0], trees[key] / main)
        assert sorted(tools) == ([b"aoe"] if key == "aoe" else [])
    job, dump = _calls_of_aoe(trees["aoe"], env, tmp_path)
    assert job == b"--job_type=2"
    assert_same_file(dump.removeprefix(b"--model_path="), trees["aoe"] / "aoe_dump")
    run_script(trees["npu"] / "compare.sh", env, tmp_path)
    (summary,), tools = recorded_calls(env)
    gpu_step = trees["gpu"] / "precision_dump" / "step0"
    assert_same_file(summary[0], trees["npu"] / "msft_compare.py")
    assert_same_file(summary[2], gpu_step)  # the GPU tree, by its name
    assert_same_file(tools[b"msprobe"][tools[b"msprobe"].index(b"-gp") + 1], gpu_step)
    _tf_profile(out / "tf" / f"{stem}_msft_profile", tf, env, tmp_path)
    assert not list(tmp_path.rglob("PWNED")), "a name ran as a command"
    _html_is_inert(out)


def _calls_of_aoe(tree: Path, env: dict[str, str], cwd: Path) -> list[bytes]:
    """The aoe tool's arguments, from a second run of the aoe launcher."""
    run_script(tree / "run_aoe_npu.sh", env, cwd)
    return recorded_calls(env)[1][b"aoe"]


def _tf_profile(tree: Path, tf: str, env: dict[str, str], cwd: Path) -> None:
    """The TF profile launcher: PROFILING_OPTIONS is JSON (valid UTF-8 for a UTF-8 path) whose
    ``output`` is the exact folder, whatever the folder is named."""
    run_script(tree / "run_profile_npu.sh", env, cwd)
    calls = Path(env["MSFT_CALLS"])
    options = next(calls.glob("*.profiling")).read_bytes()
    (python,), _ = recorded_calls(env)
    assert_same_file(python[0], tree / tf)
    profile = tree / "profile"
    if os.fsencode(profile) == str(profile).encode("utf-8", "surrogatepass"):
        options.decode("utf-8")  # strict: no byte of a UTF-8 path is left unescaped or broken
    parsed = json.loads(options.decode("utf-8", "surrogateescape"))
    assert parsed["output"] == str(profile)
    assert parsed["aic_metrics"] == "PipeUtilization"


def _html_is_inert(out: Path, controls: bool = False) -> None:
    """No markup from a name in a page (nor, with ``controls``, a control character)."""
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "<img" not in text, page
        assert not controls or not any(c in text for c in "\x1b\r"), page


@pytest.mark.parametrize("name", [NAMES["not_utf8"], NAMES["control"]], ids=["not_utf8", "control"])
def test_the_html_header_shows_the_main_name_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: bytes
) -> None:
    monkeypatch.chdir(tmp_path)
    main = os.fsdecode(name + b".py")
    project = _project(tmp_path / "in", b"proj", main, "tf_train.py")
    out = tmp_path / "out"
    args = ["-q", "--no-cache", "-i", str(project), "-o", str(out), "distributed"]
    _ok(CliRunner().invoke(run_main, [*args, "-m", main, "-t", "model"]))
    _html_is_inert(out, controls=True)


@pytest.mark.parametrize("name", NAMES.values(), ids=NAMES.keys())
def test_each_template_reads_back_the_exact_main_name(tmp_path: Path, name: bytes) -> None:
    """Every launcher template with ``name`` as its -m script and GPU tree, written as strict
    UTF-8, linted and run under the stand-ins: the script's path arrives whole."""
    main = os.fsdecode(name + b".py")
    gpu_tree = os.fsdecode(name + b"_gpu_precision")
    fields = {"kind": "aoe", "name": "run.sh", "main_rel": main, "title": "t", "env": ""}
    templates = {
        "dist.sh": (launch_script.TEMPLATE, launch_script.render(main)),
        "aoe.sh": (kit_launchers.AOE, kit_launchers.render(kit_launchers.AOE, **fields)),
        "profile_tf.sh": (
            kit_launchers.PROFILE_TF,
            kit_launchers.render(kit_launchers.PROFILE_TF, **fields),
        ),
        "precision.sh": (
            kit_launchers.PRECISION,
            kit_launchers.render(kit_launchers.PRECISION, **fields, side="NPU"),
        ),
        "compare.sh": (
            kit_launchers.COMPARE,
            kit_launchers.render(kit_launchers.COMPARE, **fields, gpu_tree=gpu_tree),
        ),
    }
    tree = tmp_path / "tree"
    tree.mkdir()
    for file, (template, text) in templates.items():
        assert text.count("\n") == template.count("\n"), file  # no line of a name's own
        (tree / file).write_bytes(text.encode("utf-8"))  # strict: the script is valid UTF-8
    _lint(sorted(tree.glob("*.sh")))
    env = stand_ins(tmp_path)
    for file in ("dist.sh", "aoe.sh", "profile_tf.sh", "precision.sh"):
        run_script(tree / file, env, tmp_path)
        (python,), _ = recorded_calls(env)
        assert len(python) == 1, (file, python)
        assert_same_file(python[0], _path(tree, name + b".py"))
    gpu_step = _path(tmp_path, name + b"_gpu_precision") / "precision_dump" / "step0"
    gpu_step.mkdir(parents=True)
    run_script(tree / "compare.sh", env, tmp_path)
    (summary,), _ = recorded_calls(env)
    assert_same_file(summary[2], gpu_step)
    assert not list(tmp_path.rglob("PWNED")), "a name ran as a command"


def test_a_zoo_of_hostile_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    zoo = tmp_path / "zoo"
    made = []
    for name in NAMES.values():
        try:
            _project(zoo, name, "train.py", "tf_train.py")
            made.append(name)
        except pytest.skip.Exception:
            continue
    out = tmp_path / "out"
    args = ["-q", "--no-cache", "--zoo", "-i", str(zoo), "-o", str(out)]
    _ok(CliRunner().invoke(run_main, args))
    for name in made:
        assert (_path(out, name + b"_msft") / "train.py").is_file(), name
    _html_is_inert(out)
    assert not list(tmp_path.rglob("PWNED"))


@pytest.mark.parametrize(
    ("main", "why"),
    [
        ("a\x1b[31mred\nline.py", "no training loop found in a\\x1b[31mred\\nline.py"),
        ("nothere\x1b[2J\n.py", "kit aoe -m: no such file"),
    ],
    ids=["no_loop", "no_file"],
)
def test_a_kit_refusal_shows_the_name_escaped(tmp_path: Path, main: str, why: str) -> None:
    project = tmp_path / "proj\x1b]0;title\x07"
    project.mkdir()
    if "no such" not in why:
        (project / main).write_text("import torch\nfor x in range(3):\n    pass\n")
    args = ["aoe", "-i", str(project), "-o", str(tmp_path / "out"), "-m", main]
    result = CliRunner().invoke(kit, args, color=True)  # nothing stripped: as on a terminal
    assert result.exit_code == 2, result.output
    assert why in result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert result.output.count("\n") == 1, result.output
    assert not (tmp_path / "out").exists()
