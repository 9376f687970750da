"""Model-zoo scale: worker pool, cache, failure isolation, batch mode, notebooks, verbosity."""

from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import comparable
from openpyxl import load_workbook

from ms_fmk_transplt.commands.cli import main

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from synthetic_zoo import generate  # noqa: E402 - the benchmarks synthetic zoo


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): comparable(p)  # report.html: not the minute
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix not in (".xlsx",) and p.name != "msFmkTranspltlog.txt"
    }


@pytest.fixture(scope="module")
def zoo(tmp_path_factory) -> Path:
    return generate(tmp_path_factory.mktemp("zoo") / "zoo", 80)  # 10 models, 60 .py files


def test_parallel_output_equals_serial(zoo: Path, tmp_path: Path) -> None:
    assert cli("-q", "-i", str(zoo), "-o", str(tmp_path / "a"), "-j", "1").exit_code == 0
    assert cli("-q", "-i", str(zoo), "-o", str(tmp_path / "b"), "-j", "2").exit_code == 0
    serial, parallel = tree(tmp_path / "a" / "zoo_msft"), tree(tmp_path / "b" / "zoo_msft")
    assert serial == parallel
    assert b"import torch_npu" in serial["model_0000/train.py"]


def test_warm_cache_gives_the_same_output(zoo: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    cold = cli("-i", str(zoo), "-o", str(tmp_path / "a"), "--cache-dir", cache, "-j", "1")
    warm = cli("-i", str(zoo), "-o", str(tmp_path / "b"), "--cache-dir", cache, "-j", "1")
    assert cold.exit_code == warm.exit_code == 0
    assert tree(tmp_path / "a" / "zoo_msft") == tree(tmp_path / "b" / "zoo_msft")
    log = (tmp_path / "b" / "zoo_msft" / "msFmkTranspltlog.txt").read_text()
    assert "from cache 60," in log  # every .py file (also the pre-filtered ones)
    # different rules (-s) miss the cache and change the output
    other = cli("-q", "-i", str(zoo), "-o", str(tmp_path / "c"), "--cache-dir", cache, "-s")
    assert other.exit_code == 0
    assert b"MSFT_NPU_DEVICE" in (tmp_path / "c/zoo_msft/model_0000/train.py").read_bytes()


def test_warm_run_reuses_the_project_facts(tmp_path: Path, monkeypatch) -> None:
    """The modules other files import CUDA-only code from are analysed once: a warm run takes
    their facts from the cache (and a changed module is analysed again)."""
    import ms_fmk_transplt.scan.project_scan as project_scan

    src = tmp_path / "proj"
    src.mkdir()
    (src / "kernels.py").write_text(
        "import triton\n\n@triton.jit\ndef add_kernel(x):\n    pass\n", encoding="utf-8"
    )
    (src / "model.py").write_text(
        "import torch\nfrom kernels import add_kernel\n\n"
        "def f(x):\n    if x.is_cuda:\n        return add_kernel(x)\n    return x.cuda()\n",
        encoding="utf-8",
    )
    analysed: list[bytes] = []
    real = project_scan.cuda_only_names

    def counting(source, table, *args, **kwargs):
        analysed.append(source)
        return real(source, table, *args, **kwargs)

    monkeypatch.setattr(project_scan, "cuda_only_names", counting)
    cache = str(tmp_path / "cache")
    outputs = []
    for run in ("a", "b"):
        result = cli("-q", "-i", str(src), "-o", str(tmp_path / run), "--cache-dir", cache)
        assert result.exit_code == 0, result.output
        outputs.append((tmp_path / run / "proj_msft" / "model.py").read_bytes())
    assert len(analysed) == 1  # kernels.py, on the cold run only
    assert outputs[0] == outputs[1] and b"if x.is_cuda:" in outputs[0]  # the guard is kept
    (src / "kernels.py").write_text("def add_kernel(x):\n    return x\n", encoding="utf-8")
    assert cli("-q", "-i", str(src), "-o", str(tmp_path / "c"), "--cache-dir", cache).exit_code == 0
    # no stale facts: plain torch code now, so the guard is migrated
    assert b"if x.is_npu:" in (tmp_path / "c/proj_msft/model.py").read_bytes()


def test_warm_run_takes_the_whole_projects_facts_from_one_entry(
    tmp_path: Path, monkeypatch
) -> None:
    """A warm run of an unchanged project does not scan it (one entry, found by the files'
    contents); a changed file rescans it; an entry that is not what a run stores is ignored."""
    import ms_fmk_transplt.scan.project_scan as project_scan

    src = tmp_path / "proj"
    src.mkdir()
    (src / "kernels.py").write_text(
        "import triton\n\n@triton.jit\ndef add_kernel(x):\n    pass\n", encoding="utf-8"
    )
    model = "import torch\nfrom kernels import add_kernel\n\ndef f(x):\n    if x.is_cuda:\n"
    (src / "model.py").write_text(model + "        return add_kernel(x)\n", encoding="utf-8")
    scans: list[int] = []
    real = project_scan.build_facts

    def counting(files, *args, **kwargs):  # type: ignore[no-untyped-def]
        scans.append(1)
        return real(files, *args, **kwargs)

    monkeypatch.setattr(project_scan, "build_facts", counting)
    cache = tmp_path / "cache"

    def run(name: str) -> bytes:
        out = tmp_path / name
        result = cli("-q", "-i", str(src), "-o", str(out), "--cache-dir", str(cache))
        assert result.exit_code == 0, result.output
        return (out / "proj_msft" / "model.py").read_bytes()

    first = run("a")
    assert (run("b"), len(scans)) == (first, 1)  # warm: no scan
    (src / "notes.py").write_text("x = 1\n", encoding="utf-8")
    assert (run("c"), len(scans)) == (first, 2)  # a new file: scanned again
    # the project entries are rewritten with values of the wrong shape: ignored, rescanned
    entries = [p for p in cache.rglob("*") if p.is_file() and b"op_namespaces" in p.read_bytes()]
    assert entries
    for path in entries:
        head, _, _ = path.read_bytes().partition(b"\n")
        path.write_bytes(head + b"\n" + b'{"cuda_only":{"kernels":["x"]},"op_namespaces":[]}')
    assert (run("d"), len(scans)) == (first, 3) and b"if x.is_cuda:" in first


@pytest.mark.parametrize(
    "value",
    [
        None,
        [],
        {"cuda_only": {}},
        {"cuda_only": [], "op_namespaces": []},
        {"cuda_only": {"m": {"a": 1}}, "op_namespaces": []},
        {"cuda_only": {"m": {"a": "b"}}, "op_namespaces": [1]},
        {"cuda_only": {}, "op_namespaces": [], "extra": 1},
        {"cuda_only": {}, "op_namespaces": []},  # written before extensions were kept
        {"cuda_only": {}, "op_namespaces": [], "extensions": []},
        {"cuda_only": {}, "op_namespaces": [], "extensions": {"pkg._C": 3}},
    ],
)
def test_a_project_entry_of_another_shape_is_not_used(value: object) -> None:
    from ms_fmk_transplt.scan.project_scan import _facts

    assert _facts(value) is None


def test_a_project_entry_reads_back_as_the_facts_it_stored() -> None:
    from ms_fmk_transplt.scan.project_scan import _facts

    facts = _facts(
        {
            "cuda_only": {"pkg.k": {"add": "Triton kernel add"}},
            "op_namespaces": ["x"],
            "extensions": {"pkg._C": "setup.py:9"},
        }
    )
    assert facts is not None
    assert facts.cuda_only == {"pkg.k": {"add": "Triton kernel add"}}
    assert facts.op_namespaces == frozenset({"x"})
    assert facts.extensions == {"pkg._C": "setup.py:9"}


class PanicException(BaseException):
    """Like pyo3's, raised by a panic in LibCST's native parser: not an Exception."""


@pytest.mark.parametrize("error", [RuntimeError, PanicException])
def test_a_crashing_file_is_isolated_in_the_pool(
    zoo: Path, tmp_path: Path, monkeypatch, error: type[BaseException]
) -> None:
    import ms_fmk_transplt.run.file_migration as pipeline

    real = pipeline.migrate_source

    def flaky(data, rel, *args, **kwargs):
        if rel == "model_0003/train.py":
            raise error("simulated crash")
        return real(data, rel, *args, **kwargs)

    monkeypatch.setattr(pipeline, "migrate_source", flaky)  # inherited by forked workers
    result = cli("-q", "-i", str(zoo), "-o", str(tmp_path), "-j", "2")
    assert result.exit_code == 1
    out = tmp_path / "zoo_msft"
    assert (out / "model_0003/train.py").read_bytes() == (zoo / "model_0003/train.py").read_bytes()
    assert b"import torch_npu" in (out / "model_0004/train.py").read_bytes()
    log = (out / "msFmkTranspltlog.txt").read_text()
    assert "simulated crash" in log and "failed 1," in log


def test_empty_input(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = cli("-i", str(tmp_path / "empty"), "-o", str(tmp_path / "o"))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "o/empty_msft").iterdir()) == [
        "advice.csv",
        "change_list.csv",
        "msFmkTranspltlog.txt",
        "report.html",
        "unsupported_op.csv",
        "unsupported_op.xlsx",
    ]


def test_zoo_batch_mode(tmp_path: Path) -> None:
    zoo = tmp_path / "zoo"
    for name in ("amp_loop", "legacy_gpu"):
        (zoo / name).mkdir(parents=True)
        for p in (ROOT / "fixtures/projects" / name).rglob("*"):
            if p.is_file():
                target = zoo / name / p.relative_to(ROOT / "fixtures/projects" / name)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(p.read_bytes())
    result = cli("-i", str(zoo), "-o", str(tmp_path / "out"), "--zoo")
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    assert (out / "amp_loop_msft/train_amp.py").exists() and (out / "legacy_gpu_msft").is_dir()
    with (out / "zoo_zoo_summary.csv").open(newline="") as fh:
        rows = {r["Model"]: r for r in csv.DictReader(fh)}
    assert set(rows) == {"amp_loop", "legacy_gpu"}
    legacy_unsupported = len(
        list(csv.DictReader((out / "legacy_gpu_msft/unsupported_op.csv").open(newline="")))
    )
    assert int(rows["legacy_gpu"]["Unsupported"]) == legacy_unsupported
    assert rows["amp_loop"]["Status"] == "ok"
    sheet = load_workbook(out / "zoo_zoo_summary.xlsx")["Zoo"]
    assert [c.value for c in sheet[1]][0] == "Model" and sheet.max_row == 4  # + totals


def test_zoo_sheet_reads_well_and_only_code_folders_are_models(tmp_path: Path) -> None:
    zoo = tmp_path / "zoo"
    for name in ("amp_loop", "legacy_gpu"):
        shutil.copytree(ROOT / "fixtures/projects" / name, zoo / name)
    (zoo / "docs").mkdir()
    (zoo / "docs" / "index.md").write_text("# models\n")
    (zoo / "docs" / "conf.py").write_text("project = 'zoo'\n")  # Sphinx: Python, not a model
    (zoo / "cpp" / "kernels").mkdir(parents=True)
    (zoo / "cpp" / "kernels" / "gelu.cu").write_text("__global__ void k() {}\n")
    (zoo / "cpp" / "tools").mkdir()
    (zoo / "cpp" / "tools" / "gen.py").write_text("print('build helper')\n")
    args = ["-i", str(zoo), "-o", str(tmp_path / "out"), "--zoo"]
    result = CliRunner().invoke(main, args, env={"COLUMNS": "200"})  # no cell of the table cut
    assert result.exit_code == 0, result.output
    shown_rows = {line.split()[1]: line for line in result.output.splitlines() if "│" in line}
    out = tmp_path / "out"
    assert not (out / "docs_msft").exists() and not (out / "cpp_msft").exists()
    with (out / "zoo_zoo_summary.csv").open(newline="") as fh:
        rows = {r["Model"]: r for r in csv.DictReader(fh)}
    assert set(rows) == {"amp_loop", "legacy_gpu"}
    assert int(rows["legacy_gpu"]["Needs manual work"]) > 0
    assert rows["legacy_gpu"]["Status"] == "needs work"
    ws = load_workbook(out / "zoo_zoo_summary.xlsx")["Zoo"]
    assert ws.page_setup.orientation == "landscape"
    total = [c.value for c in ws[ws.max_row]]
    assert total[0] == "Total" and total[1] == sum(int(r["Files"]) for r in rows.values())
    assert total[10] == "1 of 2 needs work"  # (one model: needs)
    # the zoo's conversion rate: all its converted items over all its items
    items = sum(int(r["CUDA-specific items"]) for r in rows.values())
    manual = sum(int(r["Needs manual work"]) for r in rows.values())
    assert total[8] == items and total[9] == round((items - manual) / items, 4)
    assert ws.cell(row=ws.max_row, column=10).number_format.startswith("0.0%")
    # the terminal's table: each model's rate as a percentage (not its items), the zoo's rate
    for name, row in rows.items():
        cells = [c.strip() for c in shown_rows[name].split("│")[1:-1]]
        assert cells[8] == row["CUDA-specific items"]
        assert cells[9] == f"{float(row['Conversion rate']):.1%}"
    foot = [c.strip() for c in shown_rows["Total"].split("│")[1:-1]]
    assert foot[8] == str(items) and foot[9] == f"{(items - manual) / items:.1%}"
    page = (out / "zoo_zoo_report.html").read_text(encoding="utf-8")
    foot = page.split("<tfoot>", 1)[1]
    assert f'<th class="num">{(items - manual) / items:.1%}</th>' in foot
    assert ws["A2"].hyperlink.target == "amp_loop_msft/report.html"
    assert ws["B1"].alignment.horizontal == "right" == ws["B2"].alignment.horizontal


@pytest.mark.parametrize("columns", [80, 60])
def test_zoo_table_in_a_narrow_terminal(tmp_path: Path, columns: int) -> None:
    """At 80 columns the zoo's eleven columns cut every name (``leg…``): a narrow terminal
    gets the columns that say what is left, each model's name whole (folded when longer than
    its column), and a line saying every column is in the summary files."""
    zoo = tmp_path / "zoo"
    long_name = "a_model_with_a_rather_long_folder_name_v2"
    for name, folder in (("amp_loop", "amp_loop"), ("legacy_gpu", long_name)):
        shutil.copytree(ROOT / "fixtures/projects" / name, zoo / folder)
    args = ["-i", str(zoo), "-o", str(tmp_path / "out"), "--zoo", "--color", "never"]
    result = CliRunner().invoke(main, args, env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    table = [line for line in lines if line[:1] in "┏┃┡│├└"]
    assert table and all(len(line) <= columns for line in table)  # (paths below: soft-wrapped)
    header = next(line for line in lines if "Model" in line)
    assert [c.strip() for c in header.split("┃")[1:-1]] == [
        "Model", "Changes", "Manual", "Items", "Rate", "Status"
    ]  # fmt: skip
    rows = [line for line in lines if line.startswith("│")]
    first = "".join(line.split("│")[1].strip() for line in rows)  # the Model column, joined
    assert "amp_loop" in first and long_name in first and "…" not in result.output
    with (tmp_path / "out/zoo_zoo_summary.csv").open(newline="") as fh:
        by_model = {r["Model"]: r for r in csv.DictReader(fh)}
    amp = [c.strip() for c in next(r for r in rows if "amp_loop" in r).split("│")[1:-1]]
    assert amp[1:5] == [
        by_model["amp_loop"]["Changes"],
        by_model["amp_loop"]["Needs manual work"],
        by_model["amp_loop"]["CUDA-specific items"],
        f"{float(by_model['amp_loop']['Conversion rate']):.1%}",
    ]
    assert "6 of the 11 columns; every column is in the summary files" in " ".join(lines)


def test_verbose_and_quiet(tmp_path: Path) -> None:
    project = ROOT / "fixtures/projects/toolkit"
    verbose = cli("--verbose", "-i", str(project), "-o", str(tmp_path / "v"))
    assert "run.py: changed (" in verbose.output and "toolkit/model.py: unchanged" in verbose.output
    quiet = cli("-q", "-i", str(project), "-o", str(tmp_path / "q"))
    assert quiet.exit_code == 0 and quiet.output == ""


def test_notebook_cells(tmp_path: Path) -> None:
    source = ROOT / "fixtures/projects/notebooks/explore.ipynb"
    result = cli("-q", "-i", str(source.parent), "-o", str(tmp_path))
    assert result.exit_code == 0
    before = json.loads(source.read_text())
    after = json.loads((tmp_path / "notebooks_msft/explore.ipynb").read_text())
    assert after["metadata"] == before["metadata"]
    for old, new in zip(before["cells"], after["cells"]):
        assert new.get("outputs") == old.get("outputs") and new["metadata"] == old["metadata"]
    assert after["cells"][0] == before["cells"][0]  # markdown
    assert after["cells"][2] == before["cells"][2]  # %%bash cell
    code = "".join(after["cells"][1]["source"])
    assert "%matplotlib inline\n" in code and "!nvidia-smi\n" in code  # magics restored
    assert code.count("import torch_npu") == 1
    assert 'torch.device("npu:0")' in code
