"""Start-up stays small: the everyday commands import only what they use (issue 31).

``--version``, ``--help`` and a one-file ``--check`` run through the real entry point
(``python -m ms_fmk_transplt``) in a fresh interpreter, which then lists the modules it holds.
LibCST, openpyxl, rich, jsonschema and markdown-it are each imported only by the work that needs
them (a -r/-sim/distributed stage, the workbook, a terminal summary or diff, a -r file, the rule
pages of report.html), never by these commands. Times are measured by benchmarks/startup.py,
not here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("libcst", "openpyxl", "rich", "jsonschema", "markdown_it")
AFTER_A_RUN = ("ms_fmk_transplt.report.all_reports", "ms_fmk_transplt.run.tree_migration")
# what a run needs and a one-file --check does not: the program model, the pipeline, the
# staging of the output folder, the cache (issue 50)
RUN_ONLY = (
    "ms_fmk_transplt.scan.project_scan",
    "ms_fmk_transplt.run.pipeline",
    "ms_fmk_transplt.run.staging",
    "ms_fmk_transplt.scan.cache",
)
TF_FAMILY = "ms_fmk_transplt.engine.rules.tf"
PROBE = """
import os, runpy, sys
sys.argv = ["ms_fmk_transplt", *sys.argv[1:]]
code = 0
try:
    runpy.run_module("ms_fmk_transplt", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
with open(os.environ["MSFT_PROBE_OUT"], "w", encoding="utf-8") as out:
    out.write("\\n".join(sorted(sys.modules)))
sys.exit(code)
"""
CLEAN = "import torch\nimport torch_npu\n\nx = torch.ones(2, device='npu:0')\nprint(x.sum())\n"
FINDINGS = "import torch\n\nx = torch.ones(2).cuda()\n"
TENSORFLOW = "import tensorflow as tf\n\nsess = tf.Session()\n"
FAMILIES = "ms_fmk_transplt.engine.rules"
CLEAN_TRAINING = (  # written for the NPU: nothing to migrate, advice only
    "import torch\nimport torch_npu\n\n"
    "model = torch.nn.Linear(4, 2).to('npu:0')\n"
    "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "for _ in range(3):\n"
    "    optimizer.zero_grad()\n"
    "    model(torch.randn(8, 4, device='npu:0')).sum().backward()\n"
    "    optimizer.step()\n"
)


def loaded(tmp_path: Path, *args: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The modules held by the interpreter after the command ran (its output: the second)."""
    listing = tmp_path / "modules.txt"
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env["MSFT_PROBE_OUT"] = str(listing)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return set(listing.read_text(encoding="utf-8").split("\n")), done


def roots(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted({m.split(".")[0] for m in modules} & set(names))


@pytest.mark.parametrize("args", [("--version",), ("-V",), ("--help",), ("distributed", "-h")])
def test_version_and_help_import_neither_the_engine_nor_a_heavy_library(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    modules, done = loaded(tmp_path, *args)
    assert done.returncode == 0 and done.stdout, done.stderr
    assert roots(modules, HEAVY) == []
    assert not {"ms_fmk_transplt.engine", "ms_fmk_transplt.tables", *AFTER_A_RUN} & modules


@pytest.mark.parametrize(("source", "code"), [(CLEAN, 0), (FINDINGS, 1)])
def test_a_one_file_check_imports_no_heavy_library_and_no_report(
    tmp_path: Path, source: str, code: int
) -> None:
    (tmp_path / "train.py").write_text(source, encoding="utf-8")
    modules, done = loaded(tmp_path, "--check", "train.py")
    assert done.returncode == code, done.stderr
    assert ("cuda_call" in done.stdout) == bool(code)  # the findings were printed
    assert "ms_fmk_transplt.engine.migrate" in modules  # the file was migrated in this process
    assert roots(modules, HEAVY) == []
    assert not set(AFTER_A_RUN) & modules
    assert not set(RUN_ONLY) & modules
    assert tf_family(modules) == []  # (a PyTorch file: the gated tf family is never loaded)


def test_a_one_file_check_of_a_clean_file_loads_no_span_pass_family(tmp_path: Path) -> None:
    """A file the gates settle (nothing to migrate: its advice rows only) is never walked by the
    span pass: no family of the span stage is imported (registry.fold_rows asks a family only
    for rows it folds), nor the span pass itself; the target scan's families are (its rows
    are in the JSON)."""
    from ms_fmk_transplt.engine.rules import registry

    (tmp_path / "train.py").write_text(CLEAN_TRAINING, encoding="utf-8")
    modules, done = loaded(tmp_path, "--check", "--output-format", "json", "train.py")
    assert done.returncode == 0 and "advice.fused_optimizer" in done.stdout, done.stderr
    span = [f.name for f in registry.families() if f.stage == "span"]
    assert "imports" in span and "tf" in span  # (the registry's own list of them)
    held = {m.split(".")[3] for m in modules if m.startswith(f"{FAMILIES}.") and m.count(".") > 3}
    assert "advice" in held and "operator_support" in held
    assert sorted(held & set(span)) == []
    assert "ms_fmk_transplt.engine.spans.span_pass" not in modules


def tf_family(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m == TF_FAMILY or m.startswith(f"{TF_FAMILY}."))


def test_a_one_file_check_of_tensorflow_code_loads_the_tensorflow_family(tmp_path: Path) -> None:
    """The same probe on a TensorFlow file: the family is there (the listing above would show
    it), and still no heavy library."""
    (tmp_path / "train.py").write_text(TENSORFLOW, encoding="utf-8")
    modules, done = loaded(tmp_path, "--check", "train.py")
    assert done.returncode == 1, done.stderr
    assert "tf.session_config" in done.stdout
    assert f"{TF_FAMILY}.session_spans" in tf_family(modules)
    assert roots(modules, HEAVY) == []


def test_the_probe_sees_what_a_run_imports(tmp_path: Path) -> None:
    """The same probe after a migration (-i/-o): it writes the workbook, so openpyxl is there;
    the listing above is the process's own, not an empty one."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(FINDINGS, encoding="utf-8")
    modules, done = loaded(tmp_path, "-q", "-j", "1", "-i", "src", "-o", "out")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "src_msft" / "unsupported_op.xlsx").is_file()
    assert "openpyxl" in roots(modules, HEAVY)
    assert set(AFTER_A_RUN) <= modules


@pytest.mark.parametrize("color", ["auto", "always", "never"])
@pytest.mark.parametrize(
    "environ",
    [{}, {"FORCE_COLOR": "1"}, {"FORCE_COLOR": ""}, {"TTY_COMPATIBLE": "1"}, {"NO_COLOR": "1"}],
)
def test_the_colour_answered_without_rich_is_the_one_rich_gives(
    monkeypatch: pytest.MonkeyPatch, color: str, environ: dict[str, str]
) -> None:
    """--check decides whether findings are coloured without making a rich console where it
    can (a pipe, as here); the answer is the console's own."""
    from ms_fmk_transplt.user_options import terminal

    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    made = terminal.console(color, highlight=False, soft_wrap=True, markup=False)
    rich_says = made.is_terminal and made.color_system is not None and not made.no_color
    lazy = terminal.LazyConsole(color, highlight=False, soft_wrap=True, markup=False)
    assert lazy.colours() == rich_says
    forced = "1" in (environ.get("FORCE_COLOR"), environ.get("TTY_COMPATIBLE"))
    wanted = color == "always" or (color == "auto" and forced)
    assert rich_says == (wanted and "NO_COLOR" not in environ)  # the cases differ


def test_a_command_is_imported_without_the_garbage_collector_and_kept_out_of_its_scans() -> None:
    """launch._loading: the collector is off while a command's modules load, back on after,
    and what loaded is frozen (never scanned again); a caller that had it off keeps it off and
    nothing is frozen."""
    import gc

    from ms_fmk_transplt.commands import launch

    assert gc.isenabled()
    before = gc.get_freeze_count()
    try:
        with launch._loading():
            assert not gc.isenabled()
            loaded = [[] for _ in range(1000)]
        assert gc.isenabled() and gc.get_freeze_count() >= before + len(loaded)
    finally:
        gc.unfreeze()  # (this test process's objects are scanned again)
        gc.enable()
    gc.disable()
    try:
        with launch._loading():
            loaded.append([])
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()
