"""TensorFlow notebooks: every code cell is migrated as TensorFlow code of the notebook's style
(a cell's `tf` is the `import tensorflow as tf` of another cell), the adapter's lines are
inserted once after the notebook's first TensorFlow import, and the PyTorch rules stay out."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from click.testing import CliRunner
from helpers import tables_for

from ms_fmk_transplt.commands.cli import main
from ms_fmk_transplt.events import FileStatus
from ms_fmk_transplt.run.notebook import migrate_notebook


def _notebook(*cells: str) -> bytes:
    return json.dumps(
        {
            "cells": [
                {"cell_type": "code", "metadata": {}, "outputs": [], "source": c} for c in cells
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 4,
        },
        indent=1,
    ).encode()


def _sources(data: bytes) -> list[str]:
    return [c["source"] for c in json.loads(data)["cells"]]


def test_tf1_notebook_cells_use_the_import_of_another_cell() -> None:
    data = _notebook(
        "import os\nimport tensorflow as tf\nos.environ['CUDA_VISIBLE_DEVICES'] = ''\n",
        "sess = tf.Session()\nx = tf.placeholder(tf.float32)\nbackend = 'nccl'\n",
    )
    result = migrate_notebook(data, "nb.ipynb", tables_for(), None)
    assert result.status == FileStatus.CHANGED and result.framework == "tensorflow"
    first, second = _sources(result.output)
    assert first == (
        "import os\nimport tensorflow as tf\nfrom npu_bridge.npu_init import *\n"
        "os.environ['CUDA_VISIBLE_DEVICES'] = ''\n"
    )
    assert second == (
        "sess = tf.Session(config=npu_config_proto())\nx = tf.placeholder(tf.float32)\n"
        "backend = 'nccl'\n"
    )
    rules = sorted(e.rule for e in result.events)
    assert rules == ["tf.adapter_import", "tf.session_config"]
    rows = [(n.file, n.lines(True)[0], n.rule) for n in result.notices if n.open_work]
    # the row names the cell's line as the migrated notebook shows it (after the insert)
    assert rows == [("nb.ipynb#cell0", 4, "tf.gpu_setting")]


def test_tf2_notebook_opens_the_npu_device_once() -> None:
    data = _notebook(
        "import tensorflow as tf\n", "model = tf.keras.Sequential()\nmodel.fit(x, y)\n"
    )
    result = migrate_notebook(data, "nb.ipynb", tables_for(), None)
    first, second = _sources(result.output)
    assert first == "import tensorflow as tf\nimport npu_device\nnpu_device.open().as_default()"
    assert second == "model = tf.keras.Sequential()\nmodel.fit(x, y)\n"
    again = migrate_notebook(result.output, "nb.ipynb", tables_for(), None)
    assert again.status == FileStatus.UNCHANGED  # idempotent


def test_a_notebook_importing_torch_and_tensorflow_is_migrated_as_pytorch() -> None:
    data = _notebook("import torch\nimport tensorflow as tf\n", "x = torch.ones(2).cuda()\n")
    result = migrate_notebook(data, "nb.ipynb", tables_for(), None)
    assert result.framework == ""
    assert _sources(result.output)[1] == "x = torch.ones(2).npu()\n"


def test_shell_lines_continued_by_a_backslash_are_one_ipython_line() -> None:
    # a `!` / `%` line ending in a backslash goes on on the next lines (IPython reads them as
    # one shell line, whatever their indentation); a backslash ending a Python line is Python's
    shell = (
        "!python tools/voc2012.py \\\n  --data_dir './data' \\\n\t--split train\n%env A=1 \\\nB=2\n"
    )
    python = "sess = \\\n    tf.Session()\nsteps = 1 + \\\n  2\n"
    data = _notebook("import tensorflow as tf\n", shell + python)
    result = migrate_notebook(data, "nb.ipynb", tables_for(), None)
    assert result.status == FileStatus.CHANGED
    assert not [n for n in result.notices if n.rule.startswith("parse.")]
    assert _sources(result.output)[1] == shell + (
        "sess = \\\n    tf.Session(config=npu_config_proto())\nsteps = 1 + \\\n  2\n"
    )
    rows = [(e.file, e.rule, e.out_start_line) for e in result.events if e.file.endswith("1")]
    assert rows == [("nb.ipynb#cell1", "tf.session_config", 7)]


def test_a_cell_indented_as_a_whole_is_run_dedented_and_written_back_indented() -> None:
    # IPython removes the indent of a cell's first line from each line starting with it
    # (IPython.core.inputtransformer2.leading_indent): the cell runs, so it is migrated
    cell = "\n with tf.Session() as sess:\n     !ls\n     sess.run(x)\n"
    data = _notebook("import tensorflow as tf\n", cell)
    result = migrate_notebook(data, "nb.ipynb", tables_for(), None)
    assert not [n for n in result.notices if n.rule.startswith("parse.")]
    assert _sources(result.output)[1] == (
        "\n with tf.Session(config=npu_config_proto()) as sess:\n     !ls\n     sess.run(x)\n"
    )
    # near miss: a cell whose later line is indented less than its first is not Python
    # after the dedent either (IPython refuses it too): a syntax error, left as written
    bad = "  x = tf.Session()\n y = 1\n"
    result = migrate_notebook(
        _notebook("import tensorflow as tf\n", bad), "nb.ipynb", tables_for(), None
    )
    assert [n.rule for n in result.notices if n.rule.startswith("parse.")] == ["parse.syntax_error"]
    assert _sources(result.output)[1] == bad


def test_a_notebook_is_read_against_the_support_list_of_the_tensorflow_it_runs_on(
    tmp_path: Path,
) -> None:
    """The same notebook (compat.v1 sessions, tf.executing_eagerly) under a TF 2.x pin and a TF
    1.x pin: the 1.15 list, which marks executing_eagerly unsupported, applies to the TF 1.x
    one only (a TF 2.x program's compat.v1 code runs on TF 2.x: the 2.6 list)."""
    data = _notebook(
        "import tensorflow as tf\n",
        "sess = tf.compat.v1.Session()\nif tf.executing_eagerly():\n    print(1)\n",
    )
    project = tmp_path / "project"
    for folder, pin in (("tf2", "tensorflow==2.6.0\n"), ("tf1", "tensorflow-gpu==1.15.5\n")):
        (project / folder).mkdir(parents=True)
        (project / folder / "demo.ipynb").write_bytes(data)
        (project / folder / "requirements.txt").write_text(pin)
    result = CliRunner().invoke(main, ["-q", "--no-cache", "-i", str(project), "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    with (tmp_path / "project_msft" / "unsupported_op.csv").open(encoding="utf-8") as fh:
        rows = [(r["File"], r["OP"], r["Rule"]) for r in csv.DictReader(fh)]
    assert rows == [("tf1/demo.ipynb#cell1", "tf.executing_eagerly", "tf.unsupported_api")]
    migrated = _sources((tmp_path / "project_msft" / "tf2" / "demo.ipynb").read_bytes())
    assert migrated[1].startswith("sess = tf.compat.v1.Session(config=npu_config_proto())\n")
