"""Issue 44: what a user sees when the project's own file and folder names are hostile. One
project (folder, sub-folder, -m script, a file with open work, a file whose name holds a newline;
names with ``<``, ``>``, both quotes, ``$HOME``, ``$(...)``, backticks, spaces, ``#``, ``%`` and
an attribute break-out) goes through a plain run, ``distributed -m``, every kit and ``--zoo``,
and so does the same project under plain names. Then:

* every page (report.html, the zoo page) parsed with html.parser has exactly the elements and
  attributes of its plain twin, shows each name as text, and each of its links to a file
  reaches that file;
* every CSV and workbook read back names each file as shown (``safe_names.shown``);
* every generated shell script, run with a stand-in PYTHON (tests/script_stand_ins.py), hands
  the -m script over as one argument naming the real file; nothing expands (``$HOME``) or runs
  (no PWNED file anywhere).

The names are made at test time, never committed."""

from __future__ import annotations

import csv
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest
from click.testing import CliRunner
from openpyxl import load_workbook
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
from ms_fmk_transplt.safe_names import shown

# the role of each name -> (hostile, plain)
NAMES = {
    "project": ("proj <b>\"q\" 'a' $HOME `touch PWNED` #1 %41", "proj"),
    "folder": ('dir $(touch PWNED) <i>" onmouseover="alert(1)', "dir"),
    "main": ("run $HOME `touch PWNED` 'q' \"d\" <s>.py", "run.py"),
    "open": ("<img src=x onerror=alert(1)>.py", "img.py"),
    "newline": ("new\nline $(touch PWNED) <u>.py", "newline.py"),
}
HOSTILE = {role: pair[0] for role, pair in NAMES.items()}
PLAIN = {role: pair[1] for role, pair in NAMES.items()}
TRAIN = TRAINING_SCRIPT
OPEN_WORK = """import torch

torch.cuda.nvtx.range_push("step")
y = torch.ones(2).cuda()
"""
NEWLINE = "import torch\n\ntorch.cuda.nvtx.range_pop()\n"
KITS = ("aoe", "profile", "precision")
# the launchers each tree holds (precision: both trees; compare.sh is run on its own below)
LAUNCHERS = {
    "dist": ["_msft/run_distributed_npu.sh"],
    "aoe": ["_msft_aoe/run_aoe_npu.sh"],
    "profile": ["_msft_profile/run_profile_npu.sh"],
    "precision": ["_gpu_precision/run_precision.sh", "_msft_precision/run_precision.sh"],
}


def _files(names: dict[str, str]) -> dict[str, str]:
    """The project's files (relative path -> text)."""
    return {_main(names): TRAIN, names["open"]: OPEN_WORK, names["newline"]: NEWLINE}


def _main(names: dict[str, str]) -> str:
    """The -m script, in the sub-folder."""
    return f"{names['folder']}/{names['main']}"


def _generate(root: Path, names: dict[str, str]) -> Path:
    """The project under ``names`` through every mode, each into its folder of ``root/out``."""
    project = root / "zoo" / names["project"]
    for rel, text in _files(names).items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text, encoding="utf-8")
    out, src, runner = root / "out", str(project), CliRunner()
    common = ["-q", "--no-cache", "-i", src]
    distributed = ["distributed", "-m", _main(names), "-t", "model"]
    runs = [
        (run_main, [*common, "-o", str(out / "run")]),
        (run_main, [*common, "-o", str(out / "dist"), *distributed]),
        (run_main, ["-q", "--no-cache", "--zoo", "-i", str(root / "zoo"), "-o", str(out / "zoo")]),
    ]
    runs += [(kit, [k, *common, "-o", str(out / k), "-m", _main(names)]) for k in KITS]
    for command, args in runs:
        result = runner.invoke(command, args)
        assert result.exit_code == 0, (args, result.output)
    return out


@dataclass
class Generated:
    root: Path
    out: Path
    plain: Path


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Generated]:
    """Both projects through every mode, generated once for the tests below, from inside the
    hostile tree's root (an injected ``touch PWNED`` at generation time would land there)."""
    root, plain = tmp_path_factory.mktemp("hostile"), tmp_path_factory.mktemp("plain")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        try:
            out = _generate(root, HOSTILE)
        except OSError as exc:  # pragma: no cover - a file system refusing a newline
            pytest.skip(f"the file system refuses a name: {exc}")
        yield Generated(root, out, _generate(plain, PLAIN))


def _twin(path: Path, base: Path, twin_base: Path) -> Path:
    """The plain twin of a hostile output path (each hostile name replaced by its plain one)."""
    rel = path.relative_to(base).as_posix()
    for role in sorted(NAMES, key=lambda r: -len(HOSTILE[r])):  # longest first
        rel = rel.replace(HOSTILE[role], PLAIN[role])
    return twin_base / rel


class _Page(HTMLParser):
    """A page's elements (tag and its attributes' names, counted), and its text and attribute
    values as a browser reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: Counter[tuple[str, tuple[str, ...]]] = Counter()
        self.text: list[str] = []
        self.values: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "wbr":  # a break opportunity: where it goes depends on a name's characters
            self.elements[tag, tuple(sorted(name for name, _ in attrs))] += 1
        self.values += [value or "" for _, value in attrs]
        self.links += [value for name, value in attrs if name == "href" and value]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parsed(page: Path) -> _Page:
    parser = _Page()
    parser.feed(page.read_text(encoding="utf-8"))
    parser.close()
    return parser


def test_every_page_has_the_elements_of_its_plain_twin(generated: Generated) -> None:
    pages = sorted(generated.out.rglob("*.html"))
    # run, dist, zoo (model + zoo page), aoe, profile, the NPU side of precision (the GPU side is
    # not migrated: no page of an NPU migration)
    assert len(pages) == 7, pages
    for page in pages:
        ours, twin = _parsed(page), _parsed(_twin(page, generated.out, generated.plain))
        assert ours.elements == twin.elements, page
        text = "".join(ours.text)
        assert shown(HOSTILE["project"]) in text, page
        for rel in _named(page.parent):  # each file a row names, by its name as shown
            assert shown(rel.rsplit("/", 1)[-1]) in text, (page, rel)
        for link in ours.links:
            if not link.startswith(("#", "https:")):  # a file of the output, by its URL
                assert (page.parent / unquote(link)).is_file(), (page, link)
    report = _parsed(generated.out / "run" / f"{HOSTILE['project']}_msft" / "report.html")
    assert HOSTILE["folder"] in report.values  # the open-work filter's folder, read back whole


def _named(tree: Path) -> set[str]:
    """The files the CSV files of ``tree`` name (none for the zoo's own folder)."""
    tables = ("change_list.csv", "unsupported_op.csv", "advice.csv")
    return {row["File"] for name in tables if (tree / name).exists() for row in _rows(tree / name)}


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _cells(workbook: Path) -> set[object]:
    book = load_workbook(workbook, read_only=True)
    try:
        return {
            c for sheet in book.worksheets for row in sheet.iter_rows(values_only=True) for c in row
        }
    finally:
        book.close()


def test_every_table_names_the_files_intact(generated: Generated) -> None:
    """Every tree's CSV files name only the project's files, as shown; the plain run's name
    exactly the files of each table, and its workbook the same names."""
    files = {shown(rel) for rel in _files(HOSTILE)}
    trees = [p.parent for p in generated.out.rglob("change_list.csv")]
    assert len(trees) == 7, trees  # run, dist, zoo's model, aoe, profile, 2 precision
    for tree in trees:
        assert _named(tree) <= files, tree
    main, rows = shown(_main(HOSTILE)), {shown(HOSTILE["open"]), shown(HOSTILE["newline"])}
    expected = {"unsupported_op.csv": rows, "change_list.csv": {shown(HOSTILE["open"]), main}}
    tree = generated.out / "run" / f"{HOSTILE['project']}_msft"
    for name, named in {**expected, "advice.csv": {main}}.items():
        assert {row["File"] for row in _rows(tree / name)} == named, name
    assert rows | {main} <= _cells(tree / "unsupported_op.xlsx")


def test_the_zoo_tables_name_the_model_intact(generated: Generated) -> None:
    zoo = generated.out / "zoo"
    (summary,) = zoo.glob("*_zoo_summary.csv")
    models = [row[next(iter(row))] for row in _rows(summary)]
    assert shown(HOSTILE["project"]) in models, models
    (workbook,) = zoo.glob("*_zoo_summary.xlsx")
    assert shown(HOSTILE["project"]) in _cells(workbook)


def test_every_script_hands_over_the_main_script_as_one_argument(
    generated: Generated, tmp_path: Path
) -> None:
    env = stand_ins(tmp_path)
    scripts = sorted(generated.out.rglob("*.sh"))
    assert len(scripts) == 6, scripts  # the launchers below and compare.sh
    project = HOSTILE["project"]
    for mode, launchers in LAUNCHERS.items():
        for launcher in launchers:
            tree, script = launcher.split("/")
            where = generated.out / mode / f"{project}{tree}"
            run_script(where / script, env, tmp_path)
            (python,), _ = recorded_calls(env)
            assert len(python) == 1, (launcher, python)
            assert_same_file(python[0], where / _main(HOSTILE))
    npu = generated.out / "precision" / f"{project}_msft_precision"
    gpu_step = generated.out / "precision" / f"{project}_gpu_precision" / "precision_dump" / "step0"
    assert gpu_step.is_dir()  # the GPU side's run_precision.sh made it (the stand-in dumps)
    run_script(npu / "compare.sh", env, tmp_path)
    (summary,), tools = recorded_calls(env)
    assert_same_file(summary[2], gpu_step)
    assert_same_file(tools[b"msprobe"][tools[b"msprobe"].index(b"-gp") + 1], gpu_step)
    for where in (tmp_path, generated.root):
        assert not list(where.rglob("PWNED")), "a name ran as a command"


def test_every_script_passes_shellcheck(generated: Generated) -> None:
    scripts = [str(p) for p in sorted(generated.out.rglob("*.sh"))]
    shellcheck = shutil.which("shellcheck")
    need_tool("shellcheck", shellcheck, "shellcheck not installed")
    proc = subprocess.run([str(shellcheck), *scripts], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
