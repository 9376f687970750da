"""Every rule id lives where ARCHITECTURE.md and the registry (engine/rules/registry.py) say: its
family's folder declares and implements it, the family's data exists, and its fixture and page
are named by the id."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ms_fmk_transplt.catalogue.rule_catalog import RULES as DECLARED
from ms_fmk_transplt.commands.rule_docs import all_rules
from ms_fmk_transplt.engine.rules import registry
from ms_fmk_transplt.engine.rules.registry import Family, span_concerns

ROOT = Path(__file__).resolve().parent.parent
RULES_DIR = ROOT / "ms_fmk_transplt" / "engine" / "rules"
RULES = all_rules()
FAMILIES = registry.families()
BY_NAME = registry.by_name()


def test_family_names_are_unique_and_every_folder_is_a_family() -> None:
    assert len(BY_NAME) == len(FAMILIES)
    folders = {p.name for p in RULES_DIR.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(BY_NAME)


@pytest.mark.parametrize("family", FAMILIES, ids=[f.name for f in FAMILIES])
def test_the_folder_holds_the_modules_the_registry_lists(family: Family) -> None:
    folder = RULES_DIR / family.name
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__"}
    assert modules == set(family.modules)
    assert (folder / "__init__.py").read_text(encoding="utf-8").startswith(f'"""{family.name}.')
    for concern in family.concerns:  # a span concern is defined in its family's folder
        assert concern.__module__.startswith(f"ms_fmk_transplt.engine.rules.{family.name}.")


@pytest.mark.parametrize("family", FAMILIES, ids=[f.name for f in FAMILIES])
def test_the_data_a_family_names_exists(family: Family) -> None:
    for pointer in family.data:
        path, _, key = pointer.partition("#")
        assert (ROOT / path).exists(), pointer
        if key:
            assert key in json.loads((ROOT / path).read_text(encoding="utf-8")), pointer


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_an_id_is_declared_in_its_family_and_has_its_fixture_and_page(rule_id: str) -> None:
    family = BY_NAME[rule_id.split(".")[0]]
    package, _, module = RULES[rule_id].module.rpartition(".")
    assert package == f"ms_fmk_transplt.engine.rules.{family.name}"
    assert module in family.modules
    assert (ROOT / "fixtures" / "rules" / rule_id).is_dir()
    assert (ROOT / "docs" / "rules" / f"{rule_id}.md").is_file()


def test_every_family_declares_an_id() -> None:
    assert {rule_id.split(".")[0] for rule_id in RULES} == set(BY_NAME)


def test_the_span_pass_runs_the_registry_order() -> None:
    plain = span_concerns(specify_device=False)
    spans = [f for f in FAMILIES if f.stage == "span" and f.framework == "pytorch"]
    assert plain == tuple(c for f in spans if f.option not in ("-s", "--deps") for c in f.concerns)
    with_s = span_concerns(specify_device=True)
    assert [c.__name__ for c in with_s if c not in plain] == ["SpecifyDeviceSpans"]
    with_deps = span_concerns(specify_device=False, deps=True)  # (--deps: only with facts)
    assert [c.__name__ for c in with_deps if c not in plain] == ["DepsSpans"]
    # a file of no PyTorch program that imports an analysed library still calls it
    assert span_concerns(specify_device=False, pytorch=False, deps=True) == (
        BY_NAME["deps"].concerns
    )
    tf_only = span_concerns(specify_device=False, tensorflow=True, pytorch=False)
    assert tf_only == BY_NAME["tf"].concerns


def test_every_finishing_step_runs() -> None:
    """registry.finish_file runs the steps in FINISHING order: a family with a finishing step
    not listed there would never finish a file."""
    finishing = {f.name for f in FAMILIES if f.finish is not None}
    assert finishing == set(registry.FINISHING)


def test_the_core_treats_rows_by_their_declaration_not_their_name() -> None:
    """What the core used to key on ids and prefixes is declared by the rules themselves."""
    registry.declare_all()
    bookkeeping = {i for i, r in DECLARED.items() if r.bookkeeping}
    assert {"imports.torch_npu", "todo.comment", "tf.adapter_import"} <= bookkeeping
    assert {i.split(".")[0] for i in bookkeeping} == {"imports", "todo", "tf", "kit"}
    assert all(
        i.startswith("kit.")
        for i in bookkeeping - {"imports.torch_npu", "todo.comment", "tf.adapter_import"}
    )
    fixed = {i for i, r in DECLARED.items() if r.fixed}
    assert fixed == {
        "imports.torch_npu",
        "specify_device.helper",
        "tf.adapter_import",
        "tf.npu_device",
        "optout.ignore",
        "optout.skip_file",
        "parse.decode_error",
        "parse.limit",
        "parse.syntax_error",
        "engine.internal_error",
    }
    answers = {i: r.answers for i, r in DECLARED.items() if r.answers}
    assert {i.split(".")[0] for i in answers} == {"similar", "user_rules", "device_api", "amp"}
    assert answers["device_api.hf32_switch"] == "advice.tf32_to_hf32"
    assert answers["amp.scaler_device"] == answers["amp.device_type"] == "advice.fp16_loss_scaling"


def test_architecture_md_names_every_family_and_module() -> None:
    """ARCHITECTURE.md's table of families: one row per family, in the registry's order, naming
    its folder, its stage and every module of it."""
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \| (.*) \|$", text, re.M)
    assert [name for name, _, _ in rows] == [f.name for f in FAMILIES]
    for name, stage, modules in rows:
        family = BY_NAME[name]
        assert stage == family.stage
        assert re.findall(r"`(\w+)\.py`", modules) == list(family.modules)


def test_a_change_made_in_a_worker_keeps_its_caveat_in_change_list(tmp_path: Path) -> None:
    """change_list.csv reads a rule's caveat from its declaration: the reporting process must
    declare the rules of the events its workers recorded (the -sim family is loaded only where a
    file needs it). It did not: with -j 2 the row lost its ``[caveat: ...]``."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "attention.py").write_text(
        "import torch\nfrom flash_attn.flash_attn_interface import flash_attn_func\n\n\n"
        "def attend(q, k, v):\n"
        "    return flash_attn_func(q, k, v, 0.0, softmax_scale=None, causal=True)\n",
        encoding="utf-8",
    )
    for i in range(24):  # enough files for the worker pool
        (project / f"m{i}.py").write_text("import torch\n\nx = torch.ones(2).cuda()\n")
    cmd = [sys.executable, "-m", "ms_fmk_transplt", "-q", "-i", str(project), "-o"]
    subprocess.run([*cmd, str(tmp_path / "out"), "-sim", "-j", "2", "--no-cache"], check=True)
    text = (tmp_path / "out" / "p_msft" / "change_list.csv").read_text(encoding="utf-8-sig")
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r["Rule"] == "similar.flash_attention"]
    assert rows
    caveat = DECLARED["similar.flash_attention"].caveat
    assert caveat
    assert all(f"[caveat: {caveat}]" in r["Message"] for r in rows), rows
