"""Shell completion through the real entry point, as the script of
``_MS_FMK_TRANSPLT_COMPLETE=bash_source ms_fmk_transplt`` asks for it (COMP_WORDS, COMP_CWORD):
sub-commands, ``-v`` versions, rule ids for ``--select/--ignore/rule``; without loading LibCST
or the reports."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ms_fmk_transplt.catalogue.rule_pages import known_ids
from ms_fmk_transplt.tables import known_versions

ROOT = Path(__file__).resolve().parent.parent


def complete(line: str, *python: str) -> tuple[list[str], str]:
    """What bash is offered for the last word of ``line`` (the words bash would pass), and
    what the process wrote on stderr."""
    words = line.split(" ")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "_MS_FMK_TRANSPLT_COMPLETE": "bash_complete",
        "COMP_WORDS": line,
        "COMP_CWORD": str(len(words) - 1),
    }
    done = subprocess.run(
        [sys.executable, *python, "-m", "ms_fmk_transplt"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    offered = []
    for row in done.stdout.splitlines():
        kind, _, value = row.partition(",")
        assert kind == "plain", row
        offered.append(value)
    return offered, done.stderr


def test_sub_commands() -> None:
    offered, _ = complete("ms_fmk_transplt ")
    assert offered == ["distributed", "kit", "rule"]
    offered, _ = complete("ms_fmk_transplt -i src -o out ")  # kit, rule: first words only
    assert offered == ["distributed"]
    offered, _ = complete("ms_fmk_transplt kit ")
    assert offered == ["aoe", "profile", "precision", "assess", "overflow"]
    offered, _ = complete("ms_fmk_transplt kit aoe --lo")
    assert offered == ["--loop"]


def test_target_versions() -> None:
    offered, _ = complete("ms_fmk_transplt -i src -v ")
    assert offered == list(known_versions()) and "2.1.0" in offered
    offered, _ = complete("ms_fmk_transplt --check --target-version 2.1")
    assert offered == [v for v in known_versions() if v.startswith("2.1")]


def test_rule_ids_for_select_ignore_and_rule() -> None:
    offered, _ = complete("ms_fmk_transplt --select device_api.int")
    assert offered == ["device_api.interface_table"]
    offered, _ = complete("ms_fmk_transplt rule imports.")
    assert offered == [i for i in known_ids() if i.startswith("imports.")] and offered
    offered, _ = complete("ms_fmk_transplt --explain tensor_methods.cuda_")
    assert offered == ["tensor_methods.cuda_call"]
    offered, _ = complete("ms_fmk_transplt --ignore amp,device_str")  # the next of a list
    assert "amp,device_strings" in offered
    assert all(o.startswith("amp,device_strings") for o in offered)
    offered, _ = complete("ms_fmk_transplt --diff src --ignore ")  # path modes: families too
    assert {"device_api", "imports.torch_npu"} <= set(offered)


def test_options() -> None:
    offered, _ = complete("ms_fmk_transplt --iso")
    assert offered == ["--isolated"]
    offered, _ = complete("ms_fmk_transplt --che")
    assert offered == ["--check"]


def test_completion_loads_neither_libcst_nor_the_reports() -> None:
    offered, imports = complete("ms_fmk_transplt --select ", "-X", "importtime")
    assert "device_api" in offered
    loaded = {line.split("|")[-1].strip() for line in imports.splitlines()}
    assert "ms_fmk_transplt.user_options.shell_values" in loaded  # the import log is read
    assert not {m for m in loaded if m.split(".")[0] in ("libcst", "openpyxl")}
    assert "ms_fmk_transplt.run.pipeline" not in loaded


def answers(line: str, cwd: Path) -> list[str]:
    """The entry point's raw answer to bash for the last word of ``line`` (``kind,value``)."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "_MS_FMK_TRANSPLT_COMPLETE": "bash_complete",
        "COMP_WORDS": line,
        "COMP_CWORD": str(len(line.split(" ")) - 1),
    }
    done = subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt"], capture_output=True, text=True, env=env, cwd=cwd
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


PATH_OPTIONS = [  # (the words before the value, what the shell is asked to complete)
    ("ms_fmk_transplt -i", "file"),
    ("ms_fmk_transplt --input", "file"),
    ("ms_fmk_transplt -i src -o", "dir"),
    ("ms_fmk_transplt -i src -r", "file"),
    ("ms_fmk_transplt -i src --cache-dir", "dir"),
    ("ms_fmk_transplt -i src --deps", "dir"),
    ("ms_fmk_transplt -i src --assessed", "file"),
    ("ms_fmk_transplt -i src -o out distributed -m", "file"),
    ("ms_fmk_transplt kit aoe -i", "file"),
    ("ms_fmk_transplt kit aoe -i src -o", "dir"),
    ("ms_fmk_transplt kit precision -i src -m", "file"),
    ("ms_fmk_transplt kit aoe -i src --loop", "file"),
    ("ms_fmk_transplt kit profile -i src --cache-dir", "dir"),
    ("ms_fmk_transplt --check -r", "file"),
    ("ms_fmk_transplt --check", "file"),  # PATHS
]


@pytest.mark.parametrize(("words", "kind"), PATH_OPTIONS)
def test_options_taking_a_path_ask_the_shell_for_paths(
    words: str, kind: str, tmp_path: Path
) -> None:
    """Every option taking a path (the run, distributed, kit, the path modes) answers bash with
    the marker of click's path types: the shell then lists the files (``file``) or the folders
    only (``dir``)."""
    assert answers(f"{words} sr", tmp_path) == [f"{kind},sr"]


def bash_offers(line: str, cwd: Path) -> str:
    """What an interactive bash, with the completion script ``bash_source`` prints, shows after
    ``line`` and a Tab: the real shell, the installed console script, in ``cwd``."""
    import pty
    import select
    import time

    script = Path(sys.executable).with_name("ms_fmk_transplt")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PATH": f"{script.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "INPUTRC": "/dev/null",
        "HOME": str(cwd),
        "TERM": "dumb",
        "PS1": "PROMPT> ",
    }
    setup = (
        'bind "set show-all-if-ambiguous on"; bind "set completion-query-items 0"; '
        'eval "$(_MS_FMK_TRANSPLT_COMPLETE=bash_source ms_fmk_transplt)"; echo SET""UP\n'
    )
    pid, fd = pty.fork()
    if pid == 0:  # the child: an interactive bash reading the pty
        os.chdir(cwd)
        os.execvpe("bash", ["bash", "--norc", "--noprofile", "-i"], env)

    def read_until(done: Callable[[str], bool]) -> str:
        out, end = b"", time.monotonic() + 30
        while time.monotonic() < end and not done(out.decode(errors="replace")):
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    out += os.read(fd, 4096)
                except OSError:
                    break
        return out.decode(errors="replace")

    try:
        os.write(fd, setup.encode())
        read_until(lambda text: "SETUP" in text and text.endswith("PROMPT> "))
        os.write(fd, f"{line}\t".encode())
        # bash lists the candidates, then prints the prompt and the line again
        shown = read_until(lambda text: text.count(f"PROMPT> {line}") >= 1)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)
    return shown.replace("\r", "")


@pytest.mark.skipif(sys.platform == "win32" or not shutil.which("bash"), reason="needs bash")
def test_bash_lists_paths_for_the_path_options(tmp_path: Path) -> None:
    """Through the real shell: ``-i`` lists the files and folders, ``-o`` only the folders,
    ``kit ... -m`` the files (main has none of it: -i/-o/-m were plain strings, bash offered
    nothing)."""
    (tmp_path / "src" / "models").mkdir(parents=True)
    (tmp_path / "src" / "train.py").write_text("")
    (tmp_path / "src" / "trainer.py").write_text("")
    (tmp_path / "out").mkdir()
    (tmp_path / "rules.json").write_text("{}")
    listed = bash_offers("ms_fmk_transplt -i ", tmp_path).split()
    assert {"src/", "out/", "rules.json"} <= set(listed)
    listed = bash_offers("ms_fmk_transplt -i src -o ", tmp_path).split()
    assert {"src/", "out/"} <= set(listed) and "rules.json" not in listed
    listed = bash_offers("ms_fmk_transplt kit aoe -i src -o out -m src/", tmp_path).split()
    assert {"models/", "train.py", "trainer.py"} <= set(listed)  # (bash lists the last part)
