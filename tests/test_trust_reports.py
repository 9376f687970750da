"""Issue 27 ("trust nothing it reads"), the reports and the rule file: names from the user's tree
never become a live link (the zoo index, the workbooks' hyperlinks) or a formula (every CSV and
xlsx the tool writes), and a rule file or a `-t` value that would break the run or every file a
rule matches stops the run with exit 2 and one line, before anything is written."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from openpyxl import load_workbook

from ms_fmk_transplt.report.csv_rows import FORMULA_STARTS, plain
from ms_fmk_transplt.tables.user_rule_file import load_user_rules

ROOT = Path(__file__).resolve().parent.parent
CODE = (
    b"import torch\n"
    b"x = torch.ones(1).cuda()\n"
    b"y = torch.cuda.foo_unknown()\n"
    b"opt = torch.optim.Adam([x])\n"
)
# file names a spreadsheet would evaluate, and one a browser would take for a scheme
EVIL_FILES = (
    '=HYPERLINK("http:evil","x").py',
    "+cmd.py",
    "@SUM(A1).py",
    "-x.py",
    "javascript:x.py",
)
RUN_SH = b"#!/bin/sh\n--dist-backend nccl\n=cmd|calc --backend nccl\n@x --device cuda\n"
EVIL_MODELS = ("javascript:alert(1)", "=SUM(1,2)", "-model", "+model", "@model", "plain")


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real command (a crash of the parser must not take the test process with it)."""
    return subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", "-q", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env={**os.environ, "MS_FMK_TRANSPLT_CACHE": "off"},
    )


def evil_project(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name in EVIL_FILES:
        (folder / name).write_bytes(CODE)
    (folder / "run.sh").write_bytes(RUN_SH)
    return folder


# -- no formula ---------------------------------------------------------------------------------


def assert_no_formula(out: Path) -> None:
    """Every CSV and xlsx under ``out``: no cell a spreadsheet would evaluate, and the evil names
    are there (quoted) so the check is not vacuous."""
    csvs, books = sorted(out.rglob("*.csv")), sorted(out.rglob("*.xlsx"))
    assert csvs and books
    shown: set[str] = set()
    for path in csvs:
        with path.open(encoding="utf-8", newline="") as fh:
            for row in csv.reader(fh):
                assert not [c for c in row if c.startswith(FORMULA_STARTS)], (path, row)
                shown.update(c for c in row if c.startswith("'"))
    text_cells: set[str] = set()
    for path in books:
        for ws in load_workbook(path):
            for row in ws.iter_rows():
                for cell in row:
                    assert cell.data_type != "f", (path, ws.title, cell.coordinate, cell.value)
                    if isinstance(cell.value, str) and cell.value.startswith(FORMULA_STARTS):
                        assert cell.quotePrefix, (path, ws.title, cell.coordinate)
                        text_cells.add(cell.value)
    for start in ("=", "+", "-", "@"):
        assert any(c.startswith("'" + start) for c in shown), start
        assert any(c.startswith(start) for c in text_cells), start


@pytest.mark.parametrize("mode", [(), ("--analyse",)], ids=["migrate", "analyse"])
def test_no_report_cell_is_a_formula(tmp_path: Path, mode: tuple[str, ...]) -> None:
    src = evil_project(tmp_path / "p")
    done = cli("-i", str(src), "-o", str(tmp_path / "o"), *mode, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert_no_formula(tmp_path / "o")
    out = next((tmp_path / "o").iterdir())
    with (out / "unsupported_op.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    files = {r["File"] for r in rows}
    assert {"'" + n for n in EVIL_FILES if n[0] in "=+-@"} <= files  # the names, quoted
    assert {plain(f) for f in files} == {*EVIL_FILES, "run.sh"}  # and read back
    launch = [r["OP"] for r in rows if r["File"] == "run.sh"]  # text of the user's run.sh
    assert launch and launch[0].startswith("'--dist-backend nccl (line 2)")
    if not mode:
        with (out / "change_list.csv").open(encoding="utf-8", newline="") as fh:
            lines = [r["Start Line"] for r in csv.DictReader(fh)]
        assert lines and all(n.isdigit() for n in lines)  # numbers stay numbers


def test_workbook_file_links_are_relative_urls(tmp_path: Path) -> None:
    src = evil_project(tmp_path / "p")
    done = cli("-i", str(src), "-o", str(tmp_path / "o"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "o" / "p_msft"
    ws = load_workbook(out / "unsupported_op.xlsx")["Unsupported"]
    linked = 0
    for row in list(ws.iter_rows(min_row=2))[:-1]:  # the last row holds the totals
        file = str(row[0].value).removeprefix("'")
        target = row[0].hyperlink.target if row[0].hyperlink else None
        if target is None:
            continue
        assert_relative_url(target, file)
        assert (out / unquote(target)).is_file()
        rule = row[-1].hyperlink.target
        assert urlsplit(rule).scheme == "" and rule.startswith("report.html#rule-")
        linked += 1
    assert linked >= len(EVIL_FILES)
    page = Links()  # report.html links only within itself
    page.feed((out / "report.html").read_text(encoding="utf-8"))
    assert page.found and all(k == "href" and v.startswith("#") for k, v in page.found)


# -- no live link -------------------------------------------------------------------------------


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str]] = []  # (attribute, value)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [(k, v or "") for k, v in attrs if k in ("href", "src", "action")]


def assert_relative_url(url: str, path: str) -> None:
    """``url`` is a relative URL (no scheme, host, query or fragment) whose path is ``path``."""
    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc, parts.query, parts.fragment) == ("", "", "", ""), url
    assert not url.startswith("/") and unquote(parts.path) == path, url


def test_zoo_links_and_cells_are_inert(tmp_path: Path) -> None:
    zoo = tmp_path / "zoo"
    for model in EVIL_MODELS:
        (zoo / model).mkdir(parents=True)
        (zoo / model / "train.py").write_bytes(CODE)
    out = tmp_path / "out"
    done = cli("-i", str(zoo), "-o", str(out), "--zoo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    parser = Links()
    parser.feed((out / "zoo_zoo_report.html").read_text(encoding="utf-8"))
    links = [v for k, v in parser.found if k == "href"]
    assert len(links) == len(EVIL_MODELS) and all(k == "href" for k, _ in parser.found)
    for model, link in zip(sorted(EVIL_MODELS), sorted(links, key=unquote)):
        assert_relative_url(link, f"{model}_msft/report.html")
        assert (out / unquote(link)).is_file()
    ws = load_workbook(out / "zoo_zoo_summary.xlsx")["Zoo"]
    targets = {str(r[0].value).removeprefix("'"): r[0].hyperlink for r in ws.iter_rows(min_row=2)}
    for model in EVIL_MODELS:
        link = targets[model]
        assert link is not None
        assert_relative_url(link.target, f"{model}_msft/report.html")
    assert_no_formula(out)


# -- rule files and -t --------------------------------------------------------------------------

E = "ms_fmk_transplt: error: {t}/rules.json: "
FUNC = "$.rules.FuncNameModifyRule[0]"
ARGS = "$.rules.ArgsModifyRule[0]"


def func_rule(new_name: str) -> str:
    rule = {"old_name": "a.b", "new_name": new_name}
    return json.dumps({"rules": {"FuncNameModifyRule": [rule]}})


def args_rule(**fields: object) -> str:
    rule = {"func_name": "torch.optim.SGD", "arg_new": "0.05", **fields}
    return json.dumps({"rules": {"ArgsModifyRule": [rule]}})


def args_rule_raw(arg_idx: str) -> str:  # a number json.dumps would not write
    rule = '{"func_name": "f", "arg_idx": ' + arg_idx + ', "arg_new": "1"}'
    return '{"rules": {"ArgsModifyRule": [' + rule + "]}}"


BAD_RULES = [
    ("new_name lambda", func_rule("lambda"),
     f'{FUNC}.new_name: "lambda" is not a (dotted) Python name ("lambda" is a keyword)'),
    ("new_name torch.nn.import", func_rule("torch.nn.import"),
     f'{FUNC}.new_name: "torch.nn.import" is not a (dotted) Python name ("import" is a keyword)'),
    ("new_name with a newline", func_rule("torch.nn.LayerNorm\n"),
     f'{FUNC}.new_name: "torch.nn.LayerNorm\\n" is not a (dotted) Python name'),
    ("new_name None", func_rule("None"),
     f'{FUNC}.new_name: "None" is not a (dotted) Python name ("None" is a keyword)'),
    ("module new_name class",
     json.dumps({"rules": {"ModuleNameModifyRule": [
         {"old_name": "gpu", "new_name": "class", "parent_module": "lab"}]}}),
     '$.rules.ModuleNameModifyRule[0].new_name: "class" is not a (dotted) Python name ("class" '
     "is a keyword)"),
    ("arg_name if", args_rule(arg_name="if"),
     f'{ARGS}.arg_name: "if" is not a (dotted) Python name ("if" is a keyword)'),
    ("func_name .x.if", args_rule(func_name=".x.if", arg_idx=0),
     f'{ARGS}.func_name: ".x.if" is not a (dotted) Python name ("if" is a keyword)'),
    ("arg_idx 1.0", args_rule_raw("1.0"), f"{ARGS}.arg_idx: must be integer, got 1.0"),
    ("arg_idx true", args_rule_raw("true"), f"{ARGS}.arg_idx: must be integer, got true"),
    ("arg_idx of 5,001 digits", args_rule_raw("1" + "0" * 5000),
     f"{ARGS}.arg_idx: a number of 5001 digits, far too large"),
    ("arg_idx 1001", args_rule(arg_idx=1001), f"{ARGS}.arg_idx: must be <= 1000, got 1001"),
    ("arg_new of 3,000 nested parentheses", args_rule(arg_idx=1, arg_new="(" * 3000 + ")" * 3000),
     f"{ARGS}.arg_new: longer than 1000 characters"),
    ("arg_new of 60 nested brackets", args_rule(arg_idx=1, arg_new="[" * 60 + "]" * 60),
     f"{ARGS}.arg_new: brackets nested deeper than 50 levels"),
    ("rule file nested 5,000 deep", "[" * 5000 + "]" * 5000, "JSON nested deeper than 32 levels"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "problem"), [r[1:] for r in BAD_RULES], ids=[r[0] for r in BAD_RULES]
)
def test_bad_rule_value_stops_the_run(tmp_path: Path, text: str, problem: str) -> None:
    src = evil_project(tmp_path / "p")
    (tmp_path / "rules.json").write_text(text, encoding="utf-8")
    done = cli("-i", str(src), "-o", str(tmp_path / "o"), "-r", str(tmp_path / "rules.json"),
               cwd=tmp_path)  # fmt: skip
    assert (done.returncode, done.stderr) == (2, E.format(t=tmp_path) + problem + "\n")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("path", sorted((ROOT / "rules" / "examples").glob("*.json")))
def test_example_rule_files_still_load(path: Path) -> None:
    rules = load_user_rules(str(path))
    assert rules.args or rules.funcs or rules.modules


def test_brackets_in_strings_do_not_count(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    path.write_text(args_rule(arg_idx=1, arg_new='"' + "[" * 60 + '"'), encoding="utf-8")
    assert load_user_rules(str(path)).args[0].arg_new == '"' + "[" * 60 + '"'


MAIN = b"""import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(2, 2).cuda()
loader = DataLoader(list(range(8)), batch_size=2, shuffle=True)
for epoch in range(1):
    for batch in loader:
        model(torch.ones(2, 2).cuda())
"""


@pytest.mark.parametrize(
    ("value", "shown", "problem"),
    [
        ("class", "class", "is a Python keyword, not"),
        ("model,None", "None", "is a Python keyword, not"),
        ("lambda", "lambda", "is a Python keyword, not"),
        ("model.net", "model.net", "is not"),
    ],
)
def test_bad_target_model_stops_the_run(
    tmp_path: Path, value: str, shown: str, problem: str
) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "train.py").write_bytes(MAIN)
    done = cli("-i", str(tmp_path / "p"), "-o", str(tmp_path / "o"), "distributed", "-m",
               "train.py", "-t", value, cwd=tmp_path)  # fmt: skip
    expected = f"ms_fmk_transplt: error: distributed -t: {shown!r} {problem} a variable name\n"
    assert (done.returncode, done.stderr) == (2, expected)
    assert not (tmp_path / "o").exists()


def test_a_hash_in_a_name_is_part_of_it_in_the_page_and_the_workbook(tmp_path: Path) -> None:
    """Only a notebook's location ends in ``#cellN``: a folder ``a#b`` is a folder of its own
    in report.html (not ``a``), its rows link to their diff, and the workbook links the file."""
    src = tmp_path / "p"
    (src / "a#b").mkdir(parents=True)
    (src / "a#b" / "x#y.py").write_bytes(CODE)
    done = cli("-i", str(src), "-o", str(tmp_path / "o"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "o" / "p_msft"
    page = (out / "report.html").read_text(encoding="utf-8")
    assert 'data-folder="a#b"' in page and 'data-folder="a"' not in page
    assert "<tr><td>a#b</td>" in page  # the per-folder table
    assert 'class="to-diff" href="#file-' in page
    ws = load_workbook(out / "unsupported_op.xlsx")["Unsupported"]
    rows = [r for r in ws.iter_rows(min_row=2) if r[0].value == "a#b/x#y.py"]
    assert rows and all(r[0].hyperlink is not None for r in rows)
    assert_relative_url(rows[0][0].hyperlink.target, "a#b/x#y.py")
