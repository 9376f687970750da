"""Shell completion through the real entry point, as the script of
``_MS_FMK_TRANSPLT_COMPLETE=bash_source ms_fmk_transplt`` asks for it (COMP_WORDS, COMP_CWORD):
sub-commands, ``-v`` versions, rule ids for ``--select/--ignore/rule``; without loading LibCST
or the reports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
