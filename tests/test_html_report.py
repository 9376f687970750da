"""report.html: the rows, links and escaping read back from the page, and the page loaded in a
real browser (Debian's headless chromium; skipped with the reason where it is absent)."""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from required_tools import need_tool, needs_tool

from ms_fmk_transplt.catalogue.rule_pages import known_ids
from ms_fmk_transplt.commands.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
HOSTILE = """import torch

NOTE = "</script><script>alert(1)</script> & <b>bold</b>"
x = torch.ones(2).cuda()  # </details></td></tr></table><h1>broken</h1>
torch.backends.cudnn.benchmark = True
y = x.cuda()  # <img src=x onerror="window.msftInjected=1"><b>bold</b>
m = torch.nn.DataParallel(x)  # <h1>a manual row</h1>
"""


def migrate(src: Path, out: Path, *extra: str) -> Path:
    result = CliRunner().invoke(main, ["-i", str(src), "-o", str(out), "-q", *extra])
    assert result.exit_code == 0, result.output
    return next(out.glob("*_msft")) if "--analyse" not in extra else next(out.glob("*_analysis"))


@pytest.fixture(scope="module")
def imagenet(tmp_path_factory) -> Path:
    return migrate(FIXTURES / "projects" / "imagenet", tmp_path_factory.mktemp("out"))


# a location: the file, then its line number kept whole (a break allowed before the ":")
LOCATION = '<code>main.py<wbr><span class="at">:{}</span></code>'


def page_of(folder: Path) -> str:
    return (folder / "report.html").read_text(encoding="utf-8")


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_every_open_item_is_a_row_with_its_rule_link(imagenet: Path) -> None:
    page = page_of(imagenet)
    body = page.split('id="open-work"', 1)[1].split("</table>", 1)[0]
    found = re.findall(r'<tr data-category="([^"]*)" data-rule="([^"]*)"', body)
    open_rows = [r["Rule"] for r in csv_rows(imagenet / "unsupported_op.csv")]
    assert sorted(r for _, r in found) == sorted(open_rows)  # open work: unsupported_op's rows
    n = len(open_rows)
    assert f'Open work (<span id="open-count">{n}</span>)' in page
    assert f'<a href="#open-work-title">Open work ({n})</a>' in page
    for _, rule in found:
        assert f'href="#rule-{rule}"' in body and f'id="rule-{rule}"' in page
    # manual before caveat, each with the code around its (migrated) line
    actions = re.findall(r'<td class="action-(\w+)">', body)
    assert actions == sorted(actions, key=["manual", "caveat"].index) and "advice" not in actions
    assert LOCATION.format(105) in body and "torch.nn.DataParallel(model).npu()" in body
    assert LOCATION.format(105) + ' <a class="to-diff" href="#file-0">diff</a>' in body
    assert "<code>torch.<wbr>nn.<wbr>DataParallel</code>" in body  # wraps at its dots
    # advice: a section of its own, its count advice.csv's rows
    advice = csv_rows(imagenet / "advice.csv")
    table = page.split('<table id="advice"', 1)[1].split("</table>", 1)[0]
    row = r'<tr data-category="[^"]*" data-rule="([^"]*)".*?data-count="(\d+)"'
    entries = re.findall(row, table)
    assert sum(int(c) for _, c in entries) == len(advice) > 0
    assert sorted(r for r, c in entries for _ in range(int(c))) == sorted(a["Rule"] for a in advice)
    assert f'Advice (<span id="advice-count">{len(advice)}</span>)' in page


def test_summary_and_changed_files(imagenet: Path) -> None:
    page = page_of(imagenet)
    assert "target torch_npu 2.14.0" in page
    assert "89.5%</b>converted (17 of 19 CUDA-specific items)" in page
    data = json.loads(re.search(r'id="msft-data">(.*?)</script>', page, re.S).group(1))
    (diff,) = data["files"]
    changed = [line for h in diff["hunks"] for line in h["lines"] if line[0] == "+"]
    with (imagenet / "change_list.csv").open(encoding="utf-8") as fh:
        rules = {line.split(",")[5] for line in list(fh)[1:]}
    assert {r for line in changed for r in line[4]} == rules  # every changed line names its rule
    assert all(line[4] for line in changed)
    assert '<details class="file" id="file-0"' in page and "<code>main.py</code>" in page
    for rule in rules:
        assert f'id="rule-{rule}"' in page  # the page of every rule used is in the report
    assert 'id="folders"' in page and "<svg" in page


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """A project whose code is HTML: every tag in it must reach the page as text."""
    src = tmp_path_factory.mktemp("hostile")
    (src / "train.py").write_text(HOSTILE, encoding="utf-8")
    return migrate(src, tmp_path_factory.mktemp("out"))


def test_user_code_is_escaped(hostile: Path) -> None:
    page = page_of(hostile)
    assert page.count("<script") == 2 and page.count("</script>") == 2  # data + code only
    assert "<h1>broken</h1>" not in page and "<b>bold</b>" not in page
    assert "<img" not in page
    data = re.search(r'id="msft-data">(.*?)</script>', page, re.S).group(1)
    assert "</" not in data and "\\u003c/script\\u003e" in data
    assert html.escape("# </details></td></tr></table><h1>broken</h1>") in page
    texts = {line[3] for h in json.loads(data)["files"][0]["hunks"] for line in h["lines"]}
    assert HOSTILE.splitlines()[2] in texts  # the text survives intact, as text


def test_analysis_report_uses_input_lines(tmp_path: Path) -> None:
    folder = migrate(FIXTURES / "projects" / "imagenet", tmp_path, "--analyse")
    page = page_of(folder)
    assert "Lines are those of the input file" in page and LOCATION.format(104) in page
    assert "Files that would change (1)" in page and 'class="diff"' not in page
    assert 'class="to-diff"' not in page  # no diff to link to


def test_workbook_rule_cells_link_to_the_page(imagenet: Path) -> None:
    from openpyxl import load_workbook

    ws = load_workbook(imagenet / "unsupported_op.xlsx")["Unsupported"]
    header = [c.value for c in ws[1]]
    assert header[-1] == "Rule"
    rows_ = list(ws.iter_rows(min_row=2))[:-1]  # the last row holds the totals
    links = [(row[-1].value, row[-1].hyperlink.target) for row in rows_]
    assert all(row[0].hyperlink.target == row[0].value for row in rows_)  # File -> the file
    assert links and all(t == f"report.html#rule-{v}" for v, t in links)
    assert all(v in known_ids() for v, _ in links)
    with (imagenet / "unsupported_op.csv").open(encoding="utf-8", newline="") as fh:
        shared = list(csv.reader(fh))
    # the csv shares the rows and has the same Rule column (and the tips' original wording)
    assert [h for h in shared[0] if h != "Tip (original)"] == header
    assert [r[:3] + r[-1:] for r in shared[1:]] == [
        [str(row[0].value), str(row[1].value), str(row[2].value), row[-1].value] for row in rows_
    ]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(*args: str) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0"]
    return subprocess.run(
        [CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=120, check=True
    )


@needs_tool("chromium", CHROMIUM, "Debian's chromium is not installed (.ci/run installs it)")
def test_page_in_a_real_browser(imagenet: Path, tmp_path: Path) -> None:
    url = (imagenet / "report.html").as_uri() + "#file-0"
    dom = chromium("--virtual-time-budget=3000", "--dump-dom", url)
    assert "Uncaught" not in dom.stderr and "CONSOLE" not in dom.stderr, dom.stderr
    # the script ran: the diff of the file named in the URL was rendered into the DOM
    assert '<table class="diff">' in dom.stdout and 'class="add"' in dom.stdout
    assert 'href="#rule-tensor_methods.cuda_call"' in dom.stdout
    assert "torch.nn.DataParallel" in dom.stdout
    shot = tmp_path / "report.png"
    top = (imagenet / "report.html").as_uri()  # what a reviewer sees first
    chromium("--window-size=1280,900", "--virtual-time-budget=3000", f"--screenshot={shot}", top)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # not a blank page


PROBE = Path(__file__).resolve().parent / "data" / "layout_probe.js"


def probe(folder: Path, where: Path, width: int = 1280) -> dict:
    """The numbers tests/data/layout_probe.js measures on a copy of ``folder``'s report.html in
    a window ``width`` pixels wide."""
    need_tool("chromium", CHROMIUM, "Debian's chromium is not installed (.ci/run installs it)")
    page = page_of(folder).replace(
        "</body>", f"<script>{PROBE.read_text(encoding='utf-8')}</script></body>"
    )
    probed = where / "layout_probe.html"
    probed.write_text(page, encoding="utf-8")
    dom = chromium(
        f"--window-size={width},900", "--virtual-time-budget=3000", "--dump-dom", probed.as_uri()
    )
    assert "Uncaught" not in dom.stderr, dom.stderr
    found = re.search(r'<pre id="layout-result">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stdout[-2000:]
    return json.loads(html.unescape(found.group(1)))


@pytest.fixture(scope="module")
def layout(imagenet: Path, tmp_path_factory) -> dict:
    return probe(imagenet, tmp_path_factory.mktemp("probe"))


def test_diffs_and_excerpts_are_readable_in_a_real_browser(layout: dict) -> None:
    (unified,) = layout["unified"]  # one code column: it takes the width the numbers leave
    assert unified > 0.5, layout["unified"]
    old, new = layout["split"]  # side by side: two code columns of a fair share each
    assert old > 0.3 and new > 0.3, layout["split"]
    # an open excerpt is a row of its own as wide as the table (in the Location cell it had 20%)
    assert layout["excerptShare"] > 0.9, layout["excerptShare"]
    assert len(layout["excerptRows"]) == len(layout["rows"])  # every excerpt was opened
    assert all(r["visible"] and r["height"] > 20 for r in layout["excerptRows"])
    lines = layout["excerpt"]
    assert len(lines) >= 3 and all(line["code"] is not None for line in lines), lines
    for line in lines:  # each line number sits on the line of its code
        assert abs(line["number"] - line["code"]) <= 2, line
    tops = [line["number"] for line in lines]
    assert tops == sorted(tops) and len(set(tops)) == len(tops)  # one line under the other


def test_nothing_breaks_mid_word_at_1024_pixels(imagenet: Path, tmp_path: Path) -> None:
    """At 1024 px (a laptop): the open-work table's Action words ("manual" split into
    "manu"/"al"), categories and rule ids break only between their parts, a location's line
    number stays on the line of its file name, and no line number of a diff wraps (unified
    and side by side)."""
    found = probe(imagenet, tmp_path, width=1024)
    assert found["viewport"] <= 1024
    cells = found["breaks"]
    assert any(c["text"].strip() in ("manual", "caveat") for c in cells), cells
    for cell in cells:
        for pair in cell["breaks"]:  # the characters on either side of a line break
            assert pair[0] in "/._ " or pair[1] in " :", (cell["text"], pair)  # ":" line number
            assert not pair[1].isdigit(), (cell["text"], pair)
    assert found["numberBreaks"] == {"unified": [], "split": []}, found["numberBreaks"]


def test_user_code_is_text_in_a_real_browser(hostile: Path, tmp_path: Path) -> None:
    """The hostile project's diff (unified, then side by side) and excerpts, opened in the
    browser: no element inside them came from user code, no handler of it ran, and the tags
    read as the literal text of the code."""
    found = probe(hostile, tmp_path)
    lines = HOSTILE.splitlines()
    for mode in ("unified", "split"):
        seen = found["userCode"][mode]
        assert seen["diffs"] == 1 and seen["excerpts"] >= 2, seen
        assert seen["foreign"] == 0 and not seen["ran"], seen
        for line in lines[2:]:  # every line of user code, tags and all, as text
            assert line in seen["diffText"], (mode, line)
        assert "<h1>broken</h1>" in seen["excerptText"] and "onerror=" in seen["excerptText"]


def test_open_work_table_in_a_real_browser(imagenet: Path, layout: dict) -> None:
    rows = layout["rows"]
    table = page_of(imagenet).split('id="open-work"', 1)[1].split("</table>", 1)[0]
    assert len(rows) == table.count("<tr data-category=") > 0
    for row in rows:  # the table is shown: every row and cell visible, inside the window's width
        for part in (row, *row["cells"]):
            assert part["visible"] and part["height"] > 0 and part["width"] > 0, row
            assert 0 <= part["left"] and part["right"] <= layout["viewport"] + 1, row
        assert len(row["cells"]) == 6
        for left, right in zip(row["cells"], row["cells"][1:]):  # cells side by side, apart
            assert right["left"] >= left["right"] - 1, row
    for above, below in zip(rows, rows[1:]):
        assert below["top"] >= above["bottom"] - 1, (above, below)  # rows do not overlap
    cells = layout["breaks"]
    assert len(cells) == 5 * len(rows)  # location, API, category, action, rule of each row
    for cell in cells:  # a name wraps between its parts, never inside a word
        assert all(pair[0] in "._/ " or pair[1] == " " for pair in cell["breaks"]), cell
    assert layout["link"] == "#file-0" and layout["linked"]  # a location's diff link opens it


REPEATED = """import torch

model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.Adam(model.parameters())
sgd = torch.optim.SGD(model.parameters(), lr=0.1)
"""


@pytest.fixture(scope="module")
def repeated(tmp_path_factory) -> Path:
    """30 scripts with the same two optimizers: the same advice at 30 places, twice."""
    src = tmp_path_factory.mktemp("repeated")
    for i in range(30):
        (src / f"model_{i:02}").mkdir()
        (src / f"model_{i:02}" / "train.py").write_text(REPEATED, encoding="utf-8")
    (src / "model_00" / "train.py").write_text(REPEATED + "adam = torch.optim.Adam([])\n")
    return migrate(src, tmp_path_factory.mktemp("out"))


def test_the_same_advice_at_many_places_is_one_entry(repeated: Path) -> None:
    page = page_of(repeated)
    advice = csv_rows(repeated / "advice.csv")
    table = page.split('<table id="advice"', 1)[1].split("</table>", 1)[0]
    entries = table.split("<tr data-category=")[1:]
    assert len(entries) == len({(a["Rule"], a["API"]) for a in advice}) < len(advice)
    adam = next(e for e in entries if "<code>torch.<wbr>optim.<wbr>Adam</code>" in e)
    assert 'data-count="30"' in adam and "<summary>30 places</summary>" in adam
    places = re.findall(r"<li><code>(.*?)</code>", adam)
    first_place = 'model_00/<wbr>train.py<wbr><span class="at">:5</span>'
    assert len(places) == 30 and places[0] == first_place
    # the place with 2 uses says so beside it; the shared tip does not
    first = adam.split("</li>", 1)[0]
    assert "(2 uses in this file; the first is here)" in first
    assert "uses in this file" not in adam.split("</details>", 1)[1]
    n = len(csv_rows(repeated / "unsupported_op.csv"))
    assert f'<a href="#open-work-title">Open work ({n})</a>' in page
    assert f'<a href="#advice-title">Advice ({len(advice)})</a>' in page


HEIGHT = """setTimeout(function () {
  const pre = document.createElement('pre'); pre.id = 'height-result';
  const top = function (id) { return document.getElementById(id).getBoundingClientRect().top; };
  pre.textContent = JSON.stringify({ height: document.documentElement.scrollHeight,
    summary: top('summary-title') + window.scrollY });
  document.body.appendChild(pre);
}, 300);"""


def test_a_page_of_repeated_advice_is_short_in_a_real_browser(
    repeated: Path, tmp_path: Path
) -> None:
    """60 advice rows and the pages of the rules: the Summary within the first two screens of a
    1280x900 window, the whole page a few screens (each advice repeated was a row of its own,
    each rule's page open: 50,777 px on pytorch/examples)."""
    need_tool("chromium", CHROMIUM, "Debian's chromium is not installed (.ci/run installs it)")
    probed = tmp_path / "height.html"
    probed.write_text(page_of(repeated).replace("</body>", f"<script>{HEIGHT}</script></body>"))
    dom = chromium(
        "--window-size=1280,900", "--virtual-time-budget=3000", "--dump-dom", probed.as_uri()
    )
    found = re.search(r'<pre id="height-result">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stdout[-2000:]
    size = json.loads(html.unescape(found.group(1)))
    assert size["summary"] < 1800 and size["height"] < 6000, size
    # the rule pages are collapsed; a rule link (or the workbook's) opens its page
    url = (repeated / "report.html").as_uri() + "#rule-advice.fused_optimizer"
    dom = chromium("--virtual-time-budget=3000", "--dump-dom", url).stdout
    assert '<details class="rule-page" id="rule-advice.fused_optimizer" open="">' in dom
    assert '<details class="rule-page" id="rule-imports.torch_npu">' in dom


def test_zoo_index_links_each_model_report(tmp_path: Path) -> None:
    zoo = tmp_path / "zoo"
    for name in ("imagenet", "ddp"):
        shutil.copytree(FIXTURES / "projects" / name, zoo / name)
    result = CliRunner().invoke(main, ["-i", str(zoo), "-o", str(tmp_path / "out"), "--zoo", "-q"])
    assert result.exit_code == 0, result.output
    index = (tmp_path / "out" / "zoo_zoo_report.html").read_text(encoding="utf-8")
    links = re.findall(r'<a href="([^"]+)">(\w+)</a>', index)
    assert links == [("ddp_msft/report.html", "ddp"), ("imagenet_msft/report.html", "imagenet")]
    # a totals row as the sheet has: the files of both models, how many need work
    foot = re.search(r"<tfoot><tr>(.*?)</tr></tfoot>", index)
    assert foot is not None, "no totals row"
    cells = re.findall(r"<th[^>]*>([^<]*)</th>", foot.group(1))
    files = sum(1 for m in ("imagenet", "ddp") for p in (zoo / m).rglob("*") if p.is_file())
    assert cells[0] == "Total" and cells[1] == str(files)
    assert re.search(r"\bneeds? work$", cells[-1])
    assert all((tmp_path / "out" / link).is_file() for link, _ in links)
