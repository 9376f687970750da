"""A gated family (engine/rules/registry.py GATES: the TensorFlow family) is loaded only once a
file is its own: a file holding one of its words, or one the run gives it without them (a TF
2.x program's entry, a TensorFlow notebook's cell). Each case runs in a fresh interpreter, where
no earlier file has loaded the family: in this process the fixtures have loaded it long ago.
The names of engine/rules/family_exports.py are imported one module at a time."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from ms_fmk_transplt.engine.rules import family_exports, registry
from ms_fmk_transplt.tables import load_tables

ROOT = Path(__file__).resolve().parent.parent
TF_FAMILY = "ms_fmk_transplt.engine.rules.tf"
MIGRATE = f"""
import json, sys
from ms_fmk_transplt.engine import migrate_source
from ms_fmk_transplt.tables import load_tables

result = migrate_source(sys.argv[1].encode(), "train.py", load_tables())
tf = sorted(m for m in sys.modules if m == "{TF_FAMILY}" or m.startswith("{TF_FAMILY}."))
rules = sorted({{e.rule for e in result.events}} | {{n.rule for n in result.notices}})
print(json.dumps([result.framework, result.output.decode(), rules, tf]))
"""
TF_SESSION = (
    "# 训练\nimport os\nimport tensorflow as tf\n\n"
    'os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'
    "sess = tf.Session()\nprint(sess.run(tf.ones([2])))\n"
)
PYTORCH = "# 训练\nimport torch\n\nx = torch.ones(2).cuda()\n"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["MS_FMK_TRANSPLT_CACHE"] = "off"
    return env


def migrated_alone(source: str) -> tuple[str, str, list[str], list[str]]:
    """(framework, output, rules, the tf family's modules loaded) of ``source`` migrated first
    in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", MIGRATE, source],
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    framework, output, rules, loaded = json.loads(done.stdout)
    return framework, output, rules, loaded


def test_a_pytorch_file_never_loads_the_tensorflow_family() -> None:
    framework, output, rules, loaded = migrated_alone(PYTORCH)
    assert "torch_npu" in output and "tensor_methods.cuda_call" in rules  # (it was migrated)
    assert framework == "" and loaded == []


def test_a_tensorflow_file_loads_it() -> None:
    framework, output, rules, loaded = migrated_alone(TF_SESSION)
    assert framework == "tensorflow" and TF_FAMILY in loaded
    assert "tf.session_config" in rules and "npu_config_proto()" in output


def test_an_import_spelled_in_other_unicode_forms_is_found_as_python_reads_it() -> None:
    """``import ｔensorflow`` imports tensorflow (identifiers are NFKC-normalised): the bytes
    hold no gate word, the import statement's name does."""
    odd = TF_SESSION.replace("import tensorflow", "import \uff54ensorflow")
    framework, output, rules, loaded = migrated_alone(odd)
    plain = migrated_alone(TF_SESSION)
    assert framework == "tensorflow" and TF_FAMILY in loaded
    assert (output.replace("\uff54ensorflow", "tensorflow"), rules) == (plain[1], plain[2])


def test_the_entry_of_a_tf2_program_loads_it_without_importing_tensorflow(tmp_path: Path) -> None:
    """The program model's TF 2.x entry imports no TensorFlow itself; migrated first (-j 1,
    it sorts before model.py), it still gets the NPU device opened."""
    src = tmp_path / "proj"
    src.mkdir()
    (src / "a_entry.py").write_text(
        'from model import build\n\nif __name__ == "__main__":\n    build().fit()\n',
        encoding="utf-8",
    )
    (src / "model.py").write_text(
        "import tensorflow as tf\n\n\ndef build():\n"
        "    return tf.keras.Sequential([tf.keras.layers.Dense(1)])\n",
        encoding="utf-8",
    )
    (src / "requirements.txt").write_text("tensorflow>=2.6\n", encoding="utf-8")
    args = ["-q", "-j", "1", "-i", str(src), "-o", str(tmp_path / "out")]
    done = subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", *args],
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    entry = (tmp_path / "out" / "proj_msft" / "a_entry.py").read_text(encoding="utf-8")
    assert "    npu_device.open().as_default()\n    build().fit()\n" in entry


def test_the_gate_words_cover_every_import_the_family_answers() -> None:
    """tf_files.tf_file calls a file TensorFlow by an import root of the table or a Horovod
    front end: each holds a gate word (a new root in the table cannot be missed)."""
    table = load_tables().tf_migration
    words = registry.GATES["tf"].words(load_tables())
    for name in (*table.import_roots, *table.horovod_modules):
        assert any(word in name.encode() for word in words), name


def _type_checking_imports() -> dict[str, tuple[str, str, str]]:
    tree = ast.parse((ROOT / "ms_fmk_transplt/engine/rules/family_exports.py").read_bytes())
    block = next(n for n in tree.body if isinstance(n, ast.If))
    found = {}
    for node in ast.walk(block):
        if isinstance(node, ast.ImportFrom) and node.module:
            _, family, module = node.module.rsplit(".", 2)
            for alias in node.names:
                found[alias.asname or alias.name] = (family, module, alias.name)
    return found


def test_family_exports_names_each_export_where_the_type_checker_reads_it() -> None:
    where = family_exports._WHERE  # noqa: SLF001 (the table checked)
    assert where == _type_checking_imports()
    assert set(family_exports.__all__) == set(where) | {
        "already_distributed_rule",
        "no_dataloader_rule",
    }
    for name in where:
        assert getattr(family_exports, name) is not None


def test_the_other_exports_load_no_tensorflow_code() -> None:
    """Each name is imported from its own module: all those of the other families together
    (the engine, the program model's PyTorch side, the kits' checks) load no tf module."""
    others = sorted(n for n, (family, _, _) in family_exports._WHERE.items() if family != "tf")  # noqa: SLF001
    probe = (
        f"import sys\nfrom ms_fmk_transplt.engine.rules.family_exports import {', '.join(others)}\n"
        f"print([m for m in sys.modules if m.startswith('{TF_FAMILY}')])"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=_env(), capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


OPTIONS_PROBE = """
import json, sys
from ms_fmk_transplt.engine import EngineOptions, migrate_source
from ms_fmk_transplt.tables import load_tables

options = EngineOptions(specify_device=sys.argv[2] == "-s")
result = migrate_source(sys.argv[1].encode(), "train.py", load_tables(), options)
families = {m.split(".")[3] for m in sys.modules if m.startswith("ms_fmk_transplt.engine.rules.")}
rules = sorted({e.rule for e in result.events} | {n.rule for n in result.notices})
print(json.dumps([sorted(families), result.output.decode(), rules]))
"""
DEVICE_ONE = "import torch\n\nx = torch.ones(2).to('cuda:1')\n"


def _families_loaded(source: str, option: str) -> tuple[list[str], str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", OPTIONS_PROBE, source, option],
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    families, output, rules = json.loads(done.stdout)
    return families, output, rules


def test_the_family_of_an_option_is_loaded_only_by_a_run_with_it() -> None:
    """-s, --deps, --assessed: their families (gates without words) meet no file of a run
    without the option; with -s, its family is loaded and rewrites the device."""
    option_families = sorted(
        n for n in registry.GATES if not registry.GATES[n].words(load_tables())
    )
    assert option_families == ["assess", "deps", "specify_device"]
    for name in option_families:  # (each is the family of an option, as it declares itself)
        assert registry.by_name()[name].option in ("-s", "--deps", "--assessed")
    families, output, rules = _families_loaded(DEVICE_ONE, "")
    assert "tensor_methods" in families and "device_strings.literal" in rules  # (walked)
    assert not set(option_families) & set(families)
    families, output, rules = _families_loaded(DEVICE_ONE, "-s")
    assert "specify_device" in families and not {"assess", "deps"} & set(families)
    assert "specify_device.helper" in rules and "DEVICE_ID" in output
