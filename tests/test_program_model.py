"""The program model (program_model.py, issue 43): entry points, the import graph, each
program's TensorFlow version from its pins or the names its code uses, each TensorFlow file's
style. The whole shape, with its near misses, is the project fixture fixtures/projects/tf_programs
(golden in fixtures/expected; run under the adapter's test double in test_tf_execution.py)."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import tables_for

from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.engine.program_facts import ProgramFacts, from_cached, to_cached
from ms_fmk_transplt.scan.program_model import build_programs
from ms_fmk_transplt.scan.project_files import console_modules, folder_pins, launched, pins_in
from ms_fmk_transplt.scan.tf_module_scan import read_module
from ms_fmk_transplt.tables import load_tables

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "projects" / "tf_programs"


@pytest.mark.parametrize(
    ("path", "text", "majors"),
    [
        ("requirements.txt", "tensorflow-gpu==1.15.5\n", ["1"]),
        ("requirements.txt", "tensorflow>=2.4,<2.12\n", ["2"]),
        ("requirements.txt", "tensorflow<2\n", ["1"]),
        ("requirements.txt", "tensorflow>=1.15,<2.0\n", ["1"]),
        ("requirements.txt", "tensorflow~=2.11.0\n", ["2"]),
        ("requirements.txt", "tensorflow[and-cuda]==2.15.0\n", ["2"]),
        # near misses: no version, a commented line, another package, an unbounded range
        ("requirements.txt", "tensorflow\n", []),
        ("requirements.txt", "# tensorflow==1.15\n", []),
        ("requirements.txt", "tensorflow-addons==0.13\ntensorflow_datasets>=4\n", []),
        ("requirements.txt", "tensorflow>=1.13\n", []),
        ("environment.yml", "  - tensorflow-gpu=1.15\n", ["1"]),
        ("setup.py", 'install_requires=["tensorflow>=2.0"]\n', ["2"]),
        ("Dockerfile", "ARG FROM_IMAGE_NAME=nvcr.io/nvidia/tensorflow:20.06-tf1-py3\n", ["1"]),
        ("Dockerfile", "FROM nvcr.io/nvidia/tensorflow:21.02-tf2-py3\n", ["2"]),
        ("Dockerfile", "FROM tensorflow/tensorflow:1.15.5-gpu-py3\n", ["1"]),
        ("Dockerfile", "FROM tensorflow/tensorflow:latest-gpu\n", ["2"]),
        ("Dockerfile", "FROM nvcr.io/nvidia/pytorch:21.02-py3\n", []),
        (
            "Dockerfile",
            "ARG FROM_IMAGE_NAME=nvcr.io/nvidia/merlin/merlin-tensorflow:22.12\n",
            ["2"],
        ),
        ("Dockerfile", "FROM nvcr.io/nvidia/tensorflow:19.10-py3\n", []),  # no tf1/tf2 in it
    ],
)
def test_pins(path: str, text: str, majors: list[str]) -> None:
    assert [p.major for p in pins_in(path, text)] == majors


def test_a_folder_pinning_both_versions_pins_none() -> None:
    pins = folder_pins(
        [
            ("a/requirements.txt", "tensorflow==1.15\n"),
            ("a/Dockerfile", "FROM tensorflow/tensorflow:2.4.1-gpu\n"),
            ("b/requirements-gpu.txt", "tensorflow-gpu==1.15\n"),
        ]
    )
    assert set(pins) == {"b"}
    assert pins["b"].where == "b/requirements-gpu.txt:1 tensorflow-gpu==1.15"


def test_launchers_and_console_scripts() -> None:
    text = "#!/bin/bash\n# python old.py\nhorovodrun -np 8 python ./a/main.py --x 1\n"
    text += "torchrun --nproc_per_node 8 train.py\nmpirun -n 2 python3.9 -u b/run.py\n"
    assert launched("run.sh", text) == [("./a/main.py", 3), ("train.py", 4), ("b/run.py", 5)]
    setup = 'entry_points={"console_scripts": ["tool = pkg.cli:main", "t2=pkg.b:run"]},'
    assert console_modules("setup.py", setup) == ["pkg.cli", "pkg.b"]
    toml = '[project.scripts]\nmytool = "pkg.cli:main"\n[tool.ruff]\nx = "a:b"\n'
    assert console_modules("pyproject.toml", toml) == ["pkg.cli"]
    cfg = "[options.entry_points]\nconsole_scripts =\n    tool = pkg.cli:main\n[flake8]\n"
    assert console_modules("setup.cfg", cfg) == ["pkg.cli"]


def test_modules_a_launcher_runs_with_dash_m() -> None:
    """``python -m pkg.mod`` and ``torchrun ... -m pkg.mod`` run a module: its path without
    the suffix (the model tries ``pkg/mod.py``, then ``pkg/mod/__main__.py``); ``-m`` of
    another command, or in a comment, runs nothing."""
    text = "torchrun --standalone --nproc_per_node=8 -m scripts.base_train -- --depth=24\n"
    text += "python -m scripts.chat_sft\n# python -m old.run\necho -m not.run\n"
    text += "python3 -m pkg --x 1\n"
    assert launched("runs/a.sh", text) == [
        ("scripts/base_train", 1),
        ("scripts/chat_sft", 2),
        ("pkg", 5),
    ]
    modules = {
        "scripts/base_train.py": b"import torch\n",
        "scripts/chat_sft.py": b"import torch\n",
        "pkg/__main__.py": b"import torch\n",
        "pkg/__init__.py": b"",
        "not/run.py": b"import torch\n",
    }
    facts = build_programs(modules, {}, {"runs/a.sh": text}, {}, load_tables().tf_migration)
    found = {p.entry: p.found_by for p in facts.programs}
    assert found == {
        "scripts/base_train.py": "launcher runs/a.sh:1",
        "scripts/chat_sft.py": "launcher runs/a.sh:2",
        "pkg/__main__.py": "launcher runs/a.sh:5",
    }


@pytest.mark.parametrize(
    ("source", "kinds"),
    [
        ("import tensorflow as tf\ntf.Session()\n", {"tf1_only", "graph_mode"}),
        ("import tensorflow as tf\nx = tf.random_uniform([2])\n", {"tf1_only"}),
        ("import tensorflow.compat.v1 as tf\ntf.Session()\n", {"graph_mode"}),
        ("import tensorflow as tf\ntf.compat.v1.placeholder(tf.float32)\n", {"graph_mode"}),
        ("from tensorflow.contrib import slim\nslim.conv2d\n", {"tf1_only"}),
        ("import tensorflow as tf\nw = tf.summary.create_file_writer('d')\n", {"tf2_only"}),
        ("import tensorflow as tf\nm = tf.keras.Model()\n", set()),
        # near misses: a comment, a docstring, a longer name, another module's Session
        ('import tensorflow as tf\n"""uses tf.Session"""\n# tf.logging.info\n', set()),
        ("import tensorflow as tf\nx = tf.random.uniform([2])\n", set()),
        ("import tensorflow as tf\nimport db\ndb.Session()\n", set()),
        ("tf = object()\ntf.Session()\n", set()),
        # a TF 1.x name imported under a handler of ImportError: code for either version
        (
            "import tensorflow as tf\ntry:\n    from tensorflow.contrib import slim\n"
            "except ImportError:\n    slim = None\nslim.conv2d\n",
            set(),
        ),
    ],
)
def test_api_evidence_is_resolved_names(source: str, kinds: set[str]) -> None:
    table = tables_for().tf_migration
    assert set(read_module(source.encode(), table).evidence) - {"script"} == kinds


def _programs(files: dict[str, str], pins: str = "") -> dict[str, tuple[str, str]]:
    modules = {path: text.encode() for path, text in files.items()}
    pinned = folder_pins([("requirements.txt", pins)]) if pins else {}
    facts = build_programs(modules, pinned, {}, {}, tables_for().tf_migration)
    return {p.entry: (p.version, p.decided_by) for p in facts.programs}


MAIN = "from runner import run\n\nif __name__ == '__main__':\n    run()\n"


def test_each_program_imports_its_own_runner() -> None:
    """Two programs of a monorepo each import a runner.py of their own folder: the TF 1.x
    name of one does not make the other TF 1.x."""
    facts = _programs(
        {
            "a/main.py": MAIN,
            "a/runner.py": "import tensorflow as tf\ndef run():\n    tf.Session()\n",
            "b/main.py": MAIN,
            "b/runner.py": "import tensorflow as tf\ndef run():\n    tf.keras.Model()\n",
        }
    )
    assert (
        facts["a/main.py"][0] == "1"
        and "tensorflow.Session (a/runner.py:3)" in facts["a/main.py"][1]
    )
    assert facts["b/main.py"] == ("2", "no pin, no TF 1.x-only name")


def test_the_pin_comes_before_the_names() -> None:
    files = {
        "main.py": MAIN,
        "runner.py": "import tensorflow as tf\ndef run():\n    tf.Session()\n",
    }
    assert _programs(files, "tensorflow>=2.6\n")["main.py"] == (
        "2",
        "pin requirements.txt:1 tensorflow>=2.6",
    )


def test_relative_imports_and_packages() -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/train.py": "from .model import build\nif __name__ == '__main__':\n    build()\n",
        "pkg/model.py": "import tensorflow as tf\ndef build():\n    tf.placeholder(tf.float32)\n",
    }
    assert _programs(files)["pkg/train.py"][0] == "1"


def test_json_report_names_each_program_and_why(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["-i", str(FIXTURE), "-o", str(tmp_path), "--report-format", "json", "--no-cache"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    programs = {p["entry"]: p for p in report["programs"]}
    assert {e: (p["found_by"], p["version"]) for e, p in programs.items()} == {
        "classify/main.py": ("__main__ guard", "2"),
        "detect/train.py": ("launcher scripts/run_detect.sh:3", "2"),
        "graph2/train.py": ("__main__ guard", "2"),
        "legacy/test_ops.py": ("__main__ guard", "1"),
        "legacy/train.py": ("__main__ guard", "1"),
    }
    assert programs["classify/main.py"]["decided_by"].startswith("pin classify/Dockerfile:1 ")
    styles = {path: f["style"] for path, f in report["tensorflow_files"].items()}
    assert styles["graph2/train.py"] == "tf2_compat" and styles["legacy/test_ops.py"] == "tf1"
    assert report["shared_files"] == {"common/gpus.py": ["classify/main.py", "legacy/train.py"]}
    log = (tmp_path / "tf_programs_msft" / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert (
        "WARNING common/gpus.py: imported by TF 1.x and TF 2.x programs (classify/main.py, "
        "legacy/train.py): migrated as tf2 (its own code: no pin, no TF 1.x-only name)"
    ) in log


def test_a_changed_pin_is_not_served_from_the_cache(tmp_path: Path) -> None:
    """The styles are part of the run's fingerprint: after the pin changes, a cached result of
    the file migrated for the other version is not reused."""
    src = tmp_path / "proj"
    shutil.copytree(FIXTURE / "legacy", src)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    runs = []
    for pin in ("tensorflow-gpu==1.15.5\n", "tensorflow>=2.6\n"):
        (src / "requirements.txt").write_text(pin, encoding="utf-8")
        out = tmp_path / f"out{len(runs)}"
        result = CliRunner().invoke(main, ["-q", "-i", str(src), "-o", str(out), *cache])
        assert result.exit_code == 0, result.output
        runs.append((out / "proj_msft" / "test_ops.py").read_text(encoding="utf-8"))
    assert "npu_device" not in runs[0]
    assert "npu_device.open().as_default()" in runs[1]


def test_horovod_passed_as_a_value_reaches_the_callee_parameter() -> None:
    """One call level across modules: by keyword, by position, through a relative import;
    a call passing something else, and a method, give nothing."""
    table = tables_for().tf_migration
    head = "import horovod.tensorflow as hvd\nimport tensorflow as tf\n"
    files = {
        "pkg/__init__.py": "",
        "pkg/train.py": head
        + "from optimization import create_optimizer\nfrom .utils import scale, other\n"
        + "create_optimizer(1, 2, hvd=hvd)\nscale(hvd)\nother(None)\nobj.method(hvd)\n",
        "pkg/optimization.py": "import tensorflow as tf\n"
        + "def create_optimizer(loss, lr, hvd=None):\n    return hvd\n",
        "pkg/utils.py": "import tensorflow as tf\n"
        + "def scale(h, *, k=1):\n    return h\ndef other(hvd):\n    return hvd\n",
    }
    facts = build_programs({p: t.encode() for p, t in files.items()}, {}, {}, {}, table)
    assert facts.horovod_params == {
        "pkg/optimization.py": {"hvd": "tf1"},
        "pkg/utils.py": {"h": "tf1"},
    }
    assert facts.horovod_passed == {
        "pkg/train.py": ("create_optimizer at line 5", "scale at line 6", "method at line 8")
    }


def _fixture_facts() -> ProgramFacts:
    from ms_fmk_transplt.scan.discover import resolve_project
    from ms_fmk_transplt.scan.project_scan import scan_project

    return scan_project(resolve_project(str(FIXTURE)), load_tables("")).programs


def test_the_model_read_back_from_the_cache_is_the_model() -> None:
    facts = _fixture_facts()
    assert facts.programs and facts.tf_style and facts.horovod_params and facts.shared
    assert from_cached(json.loads(json.dumps(to_cached(facts)))) == facts


@pytest.mark.parametrize(
    "damage",
    [
        lambda v: v.pop("programs"),
        lambda v: v.update(programs=[["a.py", "x", "", "", "", "3"]]),
        lambda v: v.update(programs={"a": 1}),
        lambda v: v.update(tf_style={"a.py": ["tf1"]}),
        lambda v: v.update(tf_style={"a.py": "tf1"}),
        lambda v: v.update(tf2_entries=[1]),
        lambda v: v.update(horovod_params={"a.py": {"hvd": 1}}),
        lambda v: v.update(horovod_params=[]),
        lambda v: v.update(horovod_passed={"a.py": [None]}),
        lambda v: v.update(training=["a.py", 1]),
        lambda v: v.pop("training"),
        lambda v: v.update(extra=1),
    ],
)
def test_a_damaged_cache_entry_is_no_model(damage) -> None:
    value = json.loads(json.dumps(to_cached(_fixture_facts())))
    damage(value)
    assert from_cached(value) is None


def test_a_warm_run_reads_the_model_from_the_cache(tmp_path: Path) -> None:
    """The second run reads the model's cache entry (the same outputs); a damaged entry is
    built again, the outputs unchanged."""
    cache = ["--cache-dir", str(tmp_path / "cache")]
    outputs = []
    for run in range(3):
        out = tmp_path / f"out{run}"
        result = CliRunner().invoke(main, ["-q", "-i", str(FIXTURE), "-o", str(out), *cache])
        assert result.exit_code == 0, result.output
        tree = out / "tf_programs_msft"
        outputs.append({p: (tree / p).read_bytes() for p in ("change_list.csv", "legacy/train.py")})
        if run == 1:  # the model's cache entry made unreadable as the model
            damaged = [
                entry
                for entry in (tmp_path / "cache").rglob("*")
                if entry.is_file() and b'"tf2_entries"' in entry.read_bytes()
            ]
            assert len(damaged) == 1
            data = damaged[0].read_bytes()
            damaged[0].write_bytes(data.replace(b'"tf2_entries"', b'"tf2_entriez"'))
    assert outputs[0] == outputs[1] == outputs[2]


def test_a_module_too_deep_to_analyse_gives_no_evidence(tmp_path: Path) -> None:
    """A TensorFlow module whose attribute chain would overflow the recursive name readers is
    skipped by the model (the depth guard, as every whole-file analysis), not a crash of the
    run."""
    table = tables_for().tf_migration
    source = "import tensorflow as tf\nx = tf" + ".a" * 1000 + "\n"
    assert read_module(source.encode(), table).evidence == {}
    src = tmp_path / "proj"
    src.mkdir()
    (src / "deep.py").write_text(source, encoding="utf-8")
    result = CliRunner().invoke(main, ["-q", "-i", str(src), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output


def test_a_module_importing_tensorflow_through_horovod_keras_alone_is_tensorflow() -> None:
    """``import horovod.tensorflow.keras as hvd`` is one of the table's Horovod front ends: its
    module is TensorFlow code of the program (the model took only horovod.tensorflow and
    horovod.keras from a list of its own)."""
    files = {
        "main.py": "from trainer import fit\n\nif __name__ == '__main__':\n    fit()\n",
        "trainer.py": "import horovod.tensorflow.keras as hvd\n\ndef fit():\n    hvd.init()\n",
    }
    modules = {path: text.encode() for path, text in files.items()}
    facts = build_programs(modules, {}, {}, {}, tables_for().tf_migration)
    assert {p.entry: p.framework for p in facts.programs} == {"main.py": "tensorflow"}
    assert facts.style("trainer.py") == "tf2"


def test_horovod_shutdown_goes_to_the_program_entry_only(tmp_path: Path) -> None:
    """tf.horovod_shutdown: the program model's entries (module-level code nobody imports) get
    shutdown_resource() where they end; a library module they import, whose module-level
    hvd.init() became init_resource() too, gets none, nor an entry that ends by exiting."""
    head = "import tensorflow as tf\nimport horovod.tensorflow as hvd\n"
    files = {
        "run.py": head + "import lib\n\n\ndef main():\n    hvd.init()\n"
        "    tf.Session().run(lib.op())\n\n\nmain()\n",
        "script.py": head + "hvd.init()\nx = tf.placeholder(tf.float32, [hvd.size()])",
        "lib.py": head + "hvd.init()\n\n\ndef op():\n    return tf.placeholder(tf.int32)\n",
        # an entry whose __main__ block ends by exiting: nothing after sys.exit() would run
        "exits.py": "import sys\n" + head + "import lib\n\nif __name__ == '__main__':\n"
        "    hvd.init()\n    sys.exit(tf.Session().run(lib.op()))\n",
    }
    src = tmp_path / "proj"
    src.mkdir()
    for name, text in files.items():
        (src / name).write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["-q", "-i", str(src), "-o", str(tmp_path), "--no-cache"])
    assert result.exit_code == 0, result.output
    out = {n: (tmp_path / "proj_msft" / n).read_text(encoding="utf-8") for n in files}
    pair = "shutdown_resource(npu_sess, npu_shutdown)\n{0}close_session(npu_sess)\n"
    assert out["run.py"].endswith(f"lib.op())\n    {pair.format('    ')}\n\nmain()\n")
    assert out["script.py"].endswith(f"[get_npu_rank_size()])\n{pair.format('')}")
    for quiet in ("lib.py", "exits.py"):
        assert "init_resource()" in out[quiet] and "shutdown_resource" not in out[quiet]


# -- which files are of a PyTorch program (scan/pytorch_files.py) ---------------------------

FRAMEWORK_FILES = FIXTURE.parent / "framework_files"


def _not_pytorch(files: dict[str, str]) -> frozenset[str]:
    modules = {path: text.encode() for path, text in files.items()}
    tables = tables_for()
    facts = build_programs(modules, {}, {}, {}, tables.tf_migration, None, tables.imports)
    return facts.not_pytorch


def test_files_linked_to_pytorch_code_are_pytorch() -> None:
    """A helper that imports nothing, imported by a torch script; a module a torch module
    imports; a script importing a torch module: PyTorch. A client's files (a library, no torch)
    and the module only the client imports are not; nor a TensorFlow program's helper."""
    files = {
        "train.py": "import torch\nimport helpers\n",
        "helpers.py": "DEVICE = 'cuda'\n",
        "models/net.py": "import torch.nn as nn\nfrom models import blocks\n",
        "models/blocks.py": "import os\nimport numpy\n",
        "models/__init__.py": "",
        "run.py": "from models.net import Net\n",
        "client/infer.py": "import tritonclient.http\nfrom client import modes\n",
        "client/modes.py": "CUDA = 'cuda'\n",
        "client/__init__.py": "",
        "tf_train.py": "import tensorflow as tf\nimport tf_utils\n",
        "tf_utils.py": "import numpy as np\n",
    }
    assert _not_pytorch(files) == {
        "client/infer.py",
        "client/modes.py",
        "client/__init__.py",
        "tf_utils.py",
    }


def test_a_test_importing_the_package_of_a_src_layout_is_pytorch() -> None:
    """tests/e2e/test_x.py importing ``pkg.train`` of src/pkg/ (axolotl's layout, no other
    import): linked to the package's torch code; a test importing a name of no such package
    is not."""
    files = {
        "src/pkg/__init__.py": "",
        "src/pkg/train.py": "import torch\n",
        "tests/e2e/test_x.py": "import pytest\nfrom pkg.train import train\n",
        "tests/e2e/test_y.py": "import pytest\nfrom other.train import train\n",
    }
    assert _not_pytorch(files) == {"tests/e2e/test_y.py"}


def test_an_optional_torch_import_of_a_tensorflow_file_links_nothing() -> None:
    """A TensorFlow file importing torch only under an ``if`` or a ``try`` (an optional
    backend: Hugging Face's utilities) is not PyTorch code: a helper its program imports stays
    the TensorFlow program's, as does a torch library named in a docstring. Near misses: the
    same TensorFlow file importing torch at module level, and a file that is not TensorFlow
    code importing torch in a function."""
    files = {
        "run_squad.py": "import tensorflow as tf\nimport squad_utils\nimport affinity\n",
        "squad_utils.py": (
            "import tensorflow as tf\nfrom utils import torch_ok\nif torch_ok():\n"
            "    import torch\ntry:\n    import torch.nn\nexcept ImportError:\n    pass\n"
        ),
        "utils.py": "import os\n",
        "affinity.py": "import pynvml\n",
        # an example in a docstring is no import (the line reader sees an indented one)
        "config.py": 'class Config:\n    """\n    from transformers import Model\n    """\n',
    }
    files["run_squad.py"] += "import config\n"
    assert _not_pytorch(files) == {"utils.py", "affinity.py", "config.py"}
    eager = {**files, "squad_utils.py": "import tensorflow as tf\nimport torch\n"}
    assert _not_pytorch(eager) == set()
    lazy = {**files, "utils.py": "def torch_ok():\n    import torch\n"}
    assert _not_pytorch(lazy) == set()


def test_a_loose_script_is_judged_by_the_input() -> None:
    """A file importing nothing but the standard library that no file imports: PyTorch code in
    an input holding PyTorch code or no framework at all, not in a TensorFlow-only input; a
    loose file importing a library (requests) is never PyTorch code."""
    loose = {
        "snippet.py": "from __future__ import annotations\nx = x.cuda()\n",
        "launch.py": "import os\nimport subprocess\n",
    }
    client = {"report.py": "import requests\n"}
    assert _not_pytorch({**loose, **client}) == {"report.py"}
    assert _not_pytorch({**loose, "train.py": "import torch\n"}) == set()
    tf_only = {**loose, "train.py": "import tensorflow as tf\n"}
    assert _not_pytorch(tf_only) == {"snippet.py", "launch.py"}
    # a TensorFlow file with an optional torch backend: the input is not TensorFlow code only
    optional = {
        **loose,
        "train.py": "import tensorflow as tf\ntry:\n    import torch\nexcept:\n    pass\n",
    }
    assert _not_pytorch(optional) == set()


def test_the_model_keeps_the_files_of_no_pytorch_program() -> None:
    facts = build_programs(
        {"a.py": b"import numpy\n", "b.py": b"import torch\n"},
        {},
        {},
        {},
        tables_for().tf_migration,
        None,
        tables_for().imports,
    )
    assert facts.not_pytorch == {"a.py"}
    assert from_cached(json.loads(json.dumps(to_cached(facts)))) == facts
    assert "a.py" in facts.fingerprint()  # cached results depend on it


def _rows(out: Path) -> dict[str, bytes]:
    tree = next(out.glob("*_msft"))
    return {
        p.relative_to(tree).as_posix(): p.read_bytes()
        for p in sorted(tree.rglob("*"))
        if p.is_file() and p.suffix in (".py", ".csv")
    }


def _run(src: Path, out: Path, *args: str) -> dict[str, bytes]:
    result = CliRunner().invoke(main, ["-q", "-i", str(src), "-o", str(out), *args])
    assert result.exit_code == 0, result.output
    return _rows(out)


def test_the_pytorch_files_are_the_same_cold_warm_and_in_workers(tmp_path: Path) -> None:
    """The fact comes from other files (who imports a helper): a run twice, cold then warm,
    and in one process or two workers (16 files or more), gives the same rows; once the torch
    script stops importing the helper, the helper's unchanged bytes are not served from the
    cache (the fact is in the cache key): imported by the Triton client alone, it is left as
    written, as the cold run leaves it."""
    src = tmp_path / "proj"
    shutil.copytree(FRAMEWORK_FILES, src)
    for i in range(12):  # enough Python files for the worker pool
        (src / f"extra_{i}.py").write_text(f"import torch\nx{i} = torch.ones(1).cuda()\n")
    cache = ("--cache-dir", str(tmp_path / "cache"))
    cold = _run(src, tmp_path / "cold", "-j", "1", *cache)
    assert cold["helpers.py"] != (src / "helpers.py").read_bytes()  # migrated: train.py's
    assert cold["triton/modes.py"] == (src / "triton/modes.py").read_bytes()
    assert _run(src, tmp_path / "warm", "-j", "1", *cache) == cold
    assert _run(src, tmp_path / "j2", "-j", "2", "--no-cache") == cold
    assert _run(src, tmp_path / "j2warm", "-j", "2", *cache) == cold
    train = (src / "train.py").read_text()
    (src / "train.py").write_text(train.replace("from helpers import DEVICE, move\n", ""))
    client = (src / "triton/client.py").read_text()
    (src / "triton/client.py").write_text(
        client.replace("import numpy", "import helpers\nimport numpy")
    )
    warm = _run(src, tmp_path / "after", "-j", "2", *cache)
    assert warm == _run(src, tmp_path / "after_cold", "-j", "1", "--no-cache")
    assert warm["helpers.py"] == (src / "helpers.py").read_bytes()  # of no program now


def _unbound_npu_device(source: str) -> list[int]:
    """Lines that read the name ``npu_device`` with no ``import npu_device`` above them that
    binds it there: for a read in a function, one at the top of the module or in the function;
    for a module-level read, one at module level (a ``__main__`` guard's counts)."""
    tree = ast.parse(source)

    def imports(nodes: list[ast.AST]) -> list[int]:
        return [
            n.lineno
            for n in nodes
            if isinstance(n, ast.Import)
            and any((a.asname or a.name.split(".")[0]) == "npu_device" for a in n.names)
        ]

    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.Lambda))]
    in_functions = {id(n) for f in functions for n in ast.walk(f)}
    top = imports(list(tree.body))
    module = imports([n for n in ast.walk(tree) if id(n) not in in_functions])
    unbound = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "npu_device":
            owner = [f for f in functions if f.lineno <= node.lineno <= (f.end_lineno or 0)]
            if owner:
                bound = top or any(
                    line < node.lineno for f in owner for line in imports(list(ast.walk(f)))
                )
            else:
                bound = any(line < node.lineno for line in module)
            if not bound:
                unbound.append(node.lineno)
    return unbound


def test_unbound_npu_device_is_found() -> None:
    assert _unbound_npu_device("import tensorflow as tf\nx = npu_device.open()\n") == [2]
    assert _unbound_npu_device("def f():\n    return npu_device.train\n") == [2]
    assert _unbound_npu_device("import npu_device\ndef f():\n    return npu_device.train\n") == []


def test_every_migrated_file_that_reads_npu_device_imports_it() -> None:
    """The golden trees of the TF projects: a file a change names npu_device in gets the
    import whatever its style (graph2/scaling.py: compat.v1 code whose only change is
    NpuLossScaleOptimizer got none, a NameError)."""
    expected = FIXTURE.parent.parent / "expected"
    checked = []
    for path in sorted(expected.glob("tf_*_msft/**/*.py")):
        source = path.read_text(encoding="utf-8")
        if "npu_device" in source:
            checked.append(path.relative_to(expected).as_posix())
            assert _unbound_npu_device(source) == [], path
    assert "tf_programs_msft/graph2/scaling.py" in checked
