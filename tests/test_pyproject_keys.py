"""Every ``[tool.ms_fmk_transplt]`` key works in every mode whose command takes its option (issue
44): the run, --check, --diff, --fix and kit, as the schema (``option_schema.SCHEMA``) says.
For each key x mode, the key in pyproject.toml gives what its option on the command line gives:
the same RunOptions (but the file's name) and the same outputs (the output tree, the printed
findings and diff, the files --fix rewrites); and, for a key whose effect shows in the outputs,
not those of a run without it."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_trust_cache import tree

from ms_fmk_transplt.commands import run_options as run_options_module
from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.commands.kit_cli import kit
from ms_fmk_transplt.commands.paths_cli import paths_main
from ms_fmk_transplt.records import RunOptions
from ms_fmk_transplt.user_options.option_schema import KEY_ORDER, KIT, PATHS, RUN, SCHEMA

ROOT = Path(__file__).resolve().parent.parent
TRAIN = ROOT / "fixtures" / "projects" / "clean_model" / "train.py"
FILES = {
    "train.py": TRAIN.read_text(encoding="utf-8"),  # kit -m
    "gap.py": "import torch\n\ntorch.cuda.synchronize()\nstats = torch.cuda.host_memory_stats()\n",
    "devices.py": "import torch\nx = torch.ones(2).cuda()\n" + "# padding\n" * 120,  # > 1 KiB
    "norms.py": "from apex.normalization import FusedLayerNorm\nn = FusedLayerNorm(4)\n",
    "dist_main.py": (
        ROOT / "fixtures/rules/distributed_mode.unwrapped_model/misnamed_model.py"
    ).read_text(encoding="utf-8"),
}
RULES = ROOT / "rules" / "examples" / "func_rename.json"
# key -> (its TOML value, the command line that says the same, whether its effect shows in the
# outputs, what the run mode adds after its options)
KEYS: dict[str, tuple[str, tuple[str, ...], bool, tuple[str, ...]]] = {
    "target-version": ('"2.1.0"', ("-v", "2.1.0"), True, ()),
    "select": ('["tensor_methods"]', ("--select", "tensor_methods"), True, ()),
    "ignore": ('["tensor_methods"]', ("--ignore", "tensor_methods"), True, ()),
    "extend-ignore": ('["tensor_methods"]', ("--ignore", "tensor_methods"), True, ()),
    "max-file-size": ("0.001", ("--max-file-size", "0.001"), True, ()),
    "jobs": ("2", ("-j", "2"), False, ()),  # the same outputs with any number of workers
    "rule-file": ('"rules.json"', ("-r", "{project}/rules.json"), True, ()),
    "todo-comments": (
        "false",
        ("--no-todo-comments",),
        True,
        ("distributed", "-m", "dist_main.py"),
    ),
}
BUILD = run_options_module.run_options
MODES = {RUN: ("run",), PATHS: ("check", "diff", "fix"), KIT: ("kit",)}
CASES = [
    (key, mode)
    for option in SCHEMA
    for key in option.keys
    for command in option.commands
    for mode in MODES.get(command, ())
]


def test_every_key_has_a_case() -> None:
    """From the schema: a key without a value here fails (and so does one the schema lost)."""
    assert sorted(KEYS) == sorted(KEY_ORDER) == sorted(k for o in SCHEMA for k in o.keys)
    assert {mode for _, mode in CASES} == {"run", "check", "diff", "fix", "kit"}


def make_project(where: Path, config: str) -> Path:
    """proj/ (a .git: the project root) with rules.json and, if ``config``, a pyproject.toml
    with it as the [tool.ms_fmk_transplt] table; the input is proj/src, with the files (the
    pyproject.toml is not among the files migrated: the outputs can be compared)."""
    root = where / "proj"
    src = root / "src"
    src.mkdir(parents=True)
    (root / ".git").mkdir()
    for rel, text in FILES.items():
        (src / rel).write_text(text, encoding="utf-8")
    shutil.copy(RULES, root / "rules.json")
    if config:
        table = f"[project]\nname = 'p'\n\n[tool.ms_fmk_transplt]\n{config}\n"
        (root / "pyproject.toml").write_text(table, encoding="utf-8")
    return src


def outcome(
    mode: str, where: Path, config: str, args: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> tuple[list[RunOptions], Any]:
    """The RunOptions the mode built and what it gave (exit code, output, files)."""
    src = make_project(where, config)
    args = tuple(a.replace("{project}", str(src.parent)) for a in args)
    built: list[RunOptions] = []

    def recorded(*a: Any, **k: Any) -> RunOptions:
        built.append(dataclasses.replace(BUILD(*a, **k), config_file=""))
        return built[-1]

    monkeypatch.setattr(run_options_module, "run_options", recorded)
    monkeypatch.setattr("ms_fmk_transplt.commands.paths_cli.run_options", recorded)
    out = where / "out"
    if mode in ("check", "diff", "fix"):
        result = CliRunner().invoke(paths_main, [f"--{mode}", "-q", *args, str(src)])
        files = {p.name: p.read_bytes() for p in sorted(src.glob("*.py"))}
        return built, (result.exit_code, result.output, files)
    if mode == "kit":
        command = ["aoe", "-q", "-i", str(src), "-o", str(out), "-m", "train.py", *args]
        result = CliRunner().invoke(kit, command)
    else:  # (args: the options, then the distributed part, if any)
        result = CliRunner().invoke(main, ["-q", "-i", str(src), "-o", str(out), *args])
    assert result.exit_code in (0, 1), (mode, args, result.output)
    return built, (result.exit_code, result.output, tree(out))


@pytest.mark.parametrize(("key", "mode"), CASES)
def test_a_key_gives_what_its_option_gives(
    key: str, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value, flags, shows, after = KEYS[key]
    extra = after if mode == "run" else ()
    configured = outcome(mode, tmp_path / "key", f"{key} = {value}", extra, monkeypatch)
    given = outcome(mode, tmp_path / "flag", "", (*flags, *extra), monkeypatch)
    plain = outcome(mode, tmp_path / "none", "", extra, monkeypatch)
    assert alike(configured, "key") == alike(given, "flag")
    assert configured[0] != plain[0]
    if shows:
        assert alike(configured, "key")[1] != alike(plain, "none")[1]


def alike(what: Any, folder: str) -> Any:
    """The options and outputs of a run with its own folder (key/flag/none) named alike."""

    def named(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(f"/{folder}/", "/X/")
        if isinstance(value, bytes):
            return value.replace(f"/{folder}/".encode(), b"/X/")
        if isinstance(value, (tuple, list)):
            return [named(v) for v in value]
        if isinstance(value, dict):
            return {k: named(v) for k, v in value.items()}
        if isinstance(value, RunOptions):
            return named(dataclasses.asdict(value))
        return value

    return named(what)
