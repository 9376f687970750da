"""The command line says what is left to do, the same way everywhere: conflicting modes refused,
ruff-like --check lines, --statistics, --select/--ignore, JSON / GitHub / SARIF output, one line
numbering per report."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from helpers import tool
from required_tools import need_tool

from ms_fmk_transplt.commands.cli import main

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SOURCE = (
    "import torch\n"
    "torch.backends.cudnn.benchmark = True\n"
    "model = torch.nn.DataParallel(net).cuda()\n"
    "x = torch.ones(2, device='cuda')\n"
    "y = torch.ones(2).cuda()  # msft: ignore\n"
)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    return path


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--diff", "--inplace"], "--diff and --inplace"),
        (["--check", "--diff"], "--check and --diff"),
        (["--diff", "--check"], "--diff and --check"),
        (["--check", "-i", "x"], "--check works on the files given to it"),
        (["-i", "x", "-o", "y", "-q", "--verbose"], "-q and --verbose"),
    ],
)
def test_conflicting_modes_exit_2_naming_both(script: Path, args: list[str], named: str) -> None:
    proc = tool(*args, str(script))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"ms_fmk_transplt: error: {named}")
    assert len(proc.stderr.splitlines()) == 1
    assert script.read_text() == SOURCE


def test_distributed_help_needs_no_input() -> None:
    proc = tool("distributed", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "-m, --main MAIN" in proc.stdout and "--input" not in proc.stdout


def test_check_lines_are_sorted_with_columns_and_a_closing_line(script: Path) -> None:
    proc = tool("--check", "--fail-on", "caveat", str(script))
    assert proc.returncode == 1
    lines = [line for line in proc.stdout.splitlines() if not line.startswith("  = tip: ")]
    where = [tuple(map(int, re.match(r".*?:(\d+):(\d+): ", line).groups())) for line in lines]
    assert where == sorted(where)
    assert f"{script.as_posix()}:2:1: unsupported.backend_switch torch.backends" in proc.stdout
    assert f"{script.as_posix()}:3:9: unsupported.data_parallel " in proc.stdout
    assert f"{script.as_posix()}:4:26: device_strings.literal " in proc.stdout  # the 'cuda' literal
    assert "1 file would change: run --inplace (or --diff to preview)" in proc.stderr
    assert ":5:" not in proc.stdout  # the ignored line


def test_statistics_count_per_rule_and_file(script: Path) -> None:
    proc = tool("--check", "--statistics", "--fail-on", "caveat", str(script))
    lines = proc.stdout.splitlines()
    assert re.match(r"\s+1\s+unsupported\.backend_switch\s+caveat$", "\n".join(lines), re.M) or any(
        re.fullmatch(r"\s+1\s+unsupported\.backend_switch\s+caveat", line) for line in lines
    )
    assert any(re.fullmatch(rf"\s+\d+\s+{re.escape(script.as_posix())}", line) for line in lines)


def test_select_and_ignore_take_ids_and_prefixes(script: Path, tmp_path: Path) -> None:
    only = tool("--check", "--select", "unsupported", "--fail-on", "caveat", str(script))
    found = [line for line in only.stdout.splitlines() if not line.startswith("  = tip: ")]
    assert {line.split(": ")[1].split()[0] for line in found} == {
        "unsupported.backend_switch",
        "unsupported.data_parallel",
    }
    diff = tool("--diff", "--ignore", "device_strings,imports.torch_npu", str(script))
    assert "+x = torch.ones(2, device='npu')" not in diff.stdout  # line 4 kept as written
    assert "+model = torch.nn.DataParallel(net).npu()" in diff.stdout
    wrong = tool("--check", "--select", "tensor_method", str(script))
    assert wrong.returncode == 2
    assert "--select: tensor_method: not a rule id or id prefix; did you mean" in wrong.stderr
    out = CliRunner().invoke(
        main, ["-i", str(script), "-o", str(tmp_path / "o"), "-q", "--ignore", "device_strings"]
    )
    assert out.exit_code == 0, out.output
    migrated = next((tmp_path / "o").glob("*_msft")) / "train.py"
    assert "device='cuda'" in migrated.read_text() and ".npu()" in migrated.read_text()


def test_github_annotations(script: Path) -> None:
    proc = tool("--check", "--output-format", "github", "--fail-on", "caveat", str(script))
    lines = proc.stdout.splitlines()
    switch = next(line for line in lines if "title=unsupported.backend_switch::" in line)
    assert switch.startswith(f"::warning file={script.as_posix()},line=2,endLine=2,col=1,")
    assert "(tip: harmless no-op on the NPU" in switch
    assert all(re.match(r"::(error|warning|notice) file=", line) for line in lines)


def test_sarif_validates_against_the_2_1_0_schema(script: Path) -> None:
    proc = tool("--check", "--output-format", "sarif", str(script))
    log = json.loads(proc.stdout)
    schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(log, schema)
    results = log["runs"][0]["results"]
    rules = [r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]]
    assert {r["ruleId"] for r in results} <= set(rules)
    data_parallel = next(r for r in results if r["ruleId"] == "unsupported.data_parallel")
    assert data_parallel["level"] == "error"
    region = data_parallel["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (3, 9)
    assert region["endColumn"] > 9  # the API's text, not just where it starts


def _keys(node: object) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for v in node.values() for k in _keys(v)}
    if isinstance(node, list):
        return {k for v in node for k in _keys(v)}
    return set()


def test_json_has_a_schema_version_snake_case_keys_and_every_item(script: Path) -> None:
    data = json.loads(tool("--check", "--output-format", "json", str(script)).stdout)
    assert data["schema_version"] == 1 and data["line_numbers"] == "input"
    assert all(re.fullmatch(r"[a-z_]+", k) for k in _keys(data))
    (file,) = data["files"]
    assert [i["rule"] for i in file["open_items"]] == [
        "unsupported.backend_switch",
        "unsupported.data_parallel",
    ]
    assert [w["rule"] for w in file["warnings"]] == ["optout.ignore"]
    assert file["changes"]
    # the AOE advice about cudnn.benchmark is part of that caveat row (one item), not a row
    assert file["advice"] == []
    assert "; advice (advice.aoe_tuning): use torch.npu.set_aoe" in file["open_items"][0]["tip"]


def test_notebook_cells_are_named_with_their_lines(tmp_path: Path) -> None:
    proc = tool("--check", str(FIXTURES / "projects" / "notebooks"))
    lines = proc.stdout.splitlines()
    assert any(
        re.search(r"explore\.ipynb#cell3:1:\d+: tensor_methods\.cuda_call", x) for x in lines
    )
    assert not any(re.search(r"explore\.ipynb:\d", x) for x in lines)


def test_log_csv_and_json_name_a_row_by_the_same_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["-i", str(FIXTURES / "projects" / "imagenet"), "-o", str(tmp_path), "--output-format",
         "json"],
    )  # fmt: skip
    data = json.loads(result.output)
    assert data["line_numbers"] == "migrated"
    item = next(i for i in data["files"][0]["open_items"] if i["api"] == "torch.nn.DataParallel")
    out = tmp_path / "imagenet_msft"
    log = (out / "msFmkTranspltlog.txt").read_text()
    csv_row = next(
        r for r in (out / "unsupported_op.csv").read_text().splitlines() if "DataPar" in r
    )
    assert f"main.py:{item['line']}: [unsupported.data_parallel]" in log
    assert csv_row.startswith(f"main.py,{item['line']},")
    assert "line numbers are those of the migrated files" in log


LONG_NAMES = (
    "import torch\n"
    "import apex.normalization.fused_layer_norm as fln\n"
    "from flash_attn.flash_attn_interface import flash_attn_varlen_qkvpacked_func as fa\n"
    "a = fln.fused_rms_norm_affine(x, w, s)\n"
    "c = torch.nn.DataParallel(net).cuda()\n"
)


def test_terminal_ends_with_the_headline_and_never_cuts_a_name(tmp_path: Path) -> None:
    project = tmp_path / "long"
    project.mkdir()
    (project / "train.py").write_text(LONG_NAMES)
    env = {**__import__("os").environ, "COLUMNS": "80", "LINES": "24", "TERM": "dumb"}
    proc = subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", "-i", str(project), "-o", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines if not line.startswith("review: "))
    assert lines[-1] == f"review: {tmp_path / 'o' / 'long_msft' / 'report.html'}"
    last = "\n".join(lines[-4:])
    assert "long -> torch_npu 2.14.0: " in last and "% converted" in last
    assert (
        "3 need manual work" in last  # apex (its 2 uses: one row), flash_attn, DataParallel
        and "(1 of 4 CUDA-specific items)" in last
        and "(2 changes), 0 not migrated" in last  # the import too
        and "0 caveats to check · 0 advice rows" in last
        and "review: " in last
        and "report.html" in last
    )
    assert "…" not in proc.stdout  # long API names wrap, never cut
    apis: list[str] = []
    start = next(i for i, line in enumerate(lines) if "Top open work" in line)
    for line in lines[start:]:
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 3:
            apis += [cells[0]] if cells[2] else []
            apis[-1] += "" if cells[2] else cells[0]  # a wrapped name continues
    assert {
        "apex.normalization.fused_layer_norm",
        "flash_attn.flash_attn_interface.flash_attn_varlen_qkvpacked_func",
    } <= set(apis)


def test_progress_bar_labels_its_times() -> None:
    from rich.console import Console

    from ms_fmk_transplt.report.progress import Progress

    console = Console(record=True, force_terminal=True, width=100)
    with Progress(console, enabled=True, verbose=False) as progress:
        progress.start(4)
        progress.bar.refresh()
        shown = console.export_text()
    assert "elapsed" in shown and "remaining" in shown


def test_check_is_coloured_on_a_terminal_only(script: Path) -> None:
    shown = _on_a_terminal("--check", str(script), cwd=script.parent)
    assert b"\x1b[" in shown and b"tensor_methods.cuda_call" in shown  # ANSI colours
    assert "\x1b[" not in tool("--check", str(script)).stdout  # piped: plain text


def test_two_findings_on_a_line_get_a_column_each(tmp_path: Path) -> None:
    """The same literal twice on a line: each finding names its own occurrence (both said
    column 8 before, and SARIF then held two identical results)."""
    path = tmp_path / "two.py"
    path.write_text('import torch\nc, d = "cuda", "cuda"\n')
    proc = tool("--check", str(path))
    found = [line for line in proc.stdout.splitlines() if "device_strings.literal" in line]
    assert [line.split(":")[2] for line in found] == ["8", "16"], proc.stdout


@pytest.mark.parametrize(
    ("flags", "env", "coloured"),
    [
        ((), {}, False),  # a pipe: no colour
        (("--color", "always"), {}, True),
        (("--color", "never"), {"FORCE_COLOR": "1"}, False),
        ((), {"FORCE_COLOR": "1"}, True),  # auto honours FORCE_COLOR ...
        (("--color", "auto"), {"NO_COLOR": "1", "TERM": "xterm"}, False),  # ... and NO_COLOR
    ],
)
def test_color_option_and_environment(
    script: Path, tmp_path: Path, flags: tuple[str, ...], env: dict[str, str], coloured: bool
) -> None:
    """--color auto|always|never (as ruff), NO_COLOR / FORCE_COLOR for auto: the diff of the
    path modes and the summary of a run."""
    clean = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    command = [sys.executable, "-m", "ms_fmk_transplt"]
    diff = subprocess.run(
        [*command, "--diff", *flags, str(script)],
        capture_output=True,
        text=True,
        env={**clean, **env},
    )
    assert ("\x1b[" in diff.stdout) is coloured, diff.stdout[:200]
    run = subprocess.run(
        [*command, "-i", str(script), "-o", str(tmp_path / "out"), *flags],
        capture_output=True,
        text=True,
        env={**clean, **env},
    )
    assert run.returncode == 0, run.stderr
    assert ("\x1b[" in run.stdout) is coloured, run.stdout[:200]


def test_migration_sarif_is_the_open_work_in_the_migrated_files(tmp_path: Path) -> None:
    """-i/-o --output-format sarif: one result per unsupported_op and advice row, at its line of
    the migrated file, its region spanning the API's text there."""
    project = FIXTURES / "projects" / "imagenet"
    proc = tool("-i", str(project), "-o", str(tmp_path), "--output-format", "sarif")
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)["runs"][0]
    root = tmp_path / "imagenet_msft"
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == root.resolve().as_uri() + "/"
    with (root / "unsupported_op.csv").open(encoding="utf-8", newline="") as fh:
        rows = [(r["File"], int(r["Start Line"]), r["Rule"]) for r in csv.DictReader(fh)]
    with (root / "advice.csv").open(encoding="utf-8", newline="") as fh:
        rows += [(r["File"], int(r["Line"]), r["Rule"]) for r in csv.DictReader(fh)]
    results = run["results"]
    got = []
    for r in results:
        where = r["locations"][0]["physicalLocation"]
        assert where["artifactLocation"]["uriBaseId"] == "SRCROOT"
        got.append((where["artifactLocation"]["uri"], where["region"]["startLine"], r["ruleId"]))
    assert sorted(got) == sorted(rows) and len(rows) >= 5
    levels = {r["ruleId"]: r["level"] for r in results}
    assert levels["unsupported.data_parallel"] == "error"  # manual
    assert levels["unsupported.backend_switch"] == "warning"  # caveat
    assert levels["advice.fused_optimizer"] == "note"
    spans = 0
    for r in results:
        region = r["locations"][0]["physicalLocation"]["region"]
        if "endColumn" in region:
            uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            line = (root / uri).read_text(encoding="utf-8").splitlines()[region["startLine"] - 1]
            text = line[region["startColumn"] - 1 : region["endColumn"] - 1]
            assert text and text in r["message"]["text"], (text, r)
            spans += 1
    assert spans >= 3
    schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(json.loads(proc.stdout), schema)


# names a path mode must keep whole in every output: `#` is not a notebook cell, `%` and
# spaces are not URI syntax (issue 42)
HASH_NAMES = {
    "a#b.py": "a%23b.py",
    "dir with space/x%y.py": "dir%20with%20space/x%25y.py",
    "x#y/z.py": "x%23y/z.py",
    "q?ü é.py": "q%3F%C3%BC%20%C3%A9.py",
    "n#b.ipynb": "n%23b.ipynb",
}


@pytest.fixture
def hash_project(tmp_path: Path) -> Path:
    project = tmp_path / "p"
    for name in HASH_NAMES:
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".ipynb"):
            path.write_bytes((FIXTURES / "projects" / "notebooks" / "explore.ipynb").read_bytes())
        else:
            path.write_text("import torch\nx = torch.ones(2).cuda()\n", encoding="utf-8")
    return project


def _in(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", *args, "."],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=project,
        timeout=300,
    )


def test_hash_and_percent_in_names_survive_text_and_json(hash_project: Path) -> None:
    """A `#` in a file or folder name is the name's, not a cell separator: only a notebook's
    findings get ``#cellN``."""
    lines = _in(hash_project, "--check").stdout.splitlines()
    for name in HASH_NAMES:
        tail = "#cell3:1:5:" if name.endswith(".ipynb") else ":2:5:"
        assert f"{name}{tail} tensor_methods.cuda_call .cuda() -> .npu()" in lines, lines
    files = json.loads(_in(hash_project, "--check", "--output-format", "json").stdout)["files"]
    assert {f["path"] for f in files} == set(HASH_NAMES)
    for f in files:
        cells = f["path"].endswith(".ipynb")
        for found in f["changes"]:
            assert found["path"] == f["path"] or (cells and found["path"].startswith(f["path"]))
            assert re.fullmatch(r"#cell\d+", found["path"][len(f["path"]) :]) or not cells


def test_hash_and_percent_in_names_survive_github_and_sarif(hash_project: Path) -> None:
    """GitHub annotations name the file with ``%`` ``:`` ``,`` CR and LF escaped (the toolkit's
    escapeProperty), SARIF URIs are RFC 3986 percent-encoded; both keep a `#` of the name."""
    from urllib.parse import unquote

    github = _in(hash_project, "--check", "--output-format", "github").stdout.splitlines()
    named = set(re.findall(r"^::\w+ file=(.*?),line=", "\n".join(github), re.M))
    assert len(github) == 2 * 4 + 4  # two findings a file, four in the notebook
    assert named == {name.replace("%", "%25") for name in HASH_NAMES}
    proc = _in(hash_project, "--check", "--output-format", "sarif")
    log = json.loads(proc.stdout)
    jsonschema.validate(log, json.loads((ROOT / "tests/data/sarif-schema-2.1.0.json").read_text()))
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in log["runs"][0]["results"]
    }
    assert uris == set(HASH_NAMES.values())
    assert all(re.fullmatch(r"[A-Za-z0-9\-._~/%]+", uri) for uri in uris)  # RFC 3986 only
    assert all((hash_project / unquote(uri)).is_file() for uri in uris)


def test_github_properties_and_data_are_escaped_as_the_toolkit_does() -> None:
    from ms_fmk_transplt.report.findings import Finding, github_lines

    found = Finding("a:b,c%d\r\ne#f.py", 2, 5, 2, "r.x", "change", "50% done\r\nnext: a, b")
    assert github_lines([found]) == [
        "::error file=a%3Ab%2Cc%25d%0D%0Ae#f.py,line=2,endLine=2,col=5,title=r.x::"
        "50%25 done%0D%0Anext: a, b"
    ]


# a code line holding a terminal escape (as bytes, in a string and a comment) and a bidi control
ESCAPES = (
    b'import torch\ns = "\x1b[31m"  # \x1b]0;title\x07 \xe2\x80\xae\ny = torch.ones(2).cuda()\n'
)


def _diff_project(tmp_path: Path) -> Path:
    project = tmp_path / "d"
    (project / "dir with space").mkdir(parents=True)
    (project / "esc.py").write_bytes(ESCAPES)
    (project / "a#b.py").write_bytes(b"import torch\r\nx = torch.ones(2).cuda()\r\n")  # CRLF
    (project / "dir with space" / "x%y.py").write_bytes(
        b"import torch\nif x:\n\ty = torch.ones(2).cuda()"  # a tab, no newline at the end
    )
    return project


def test_piped_diff_is_byte_faithful_and_applies(tmp_path: Path) -> None:
    """Piped, --diff prints the lines' bytes (escape sequences, CR, tabs) and marks a last line
    without a newline: ``git apply`` of it gives what --inplace writes."""
    need_tool("git", shutil.which("git"), "git not installed")
    project = _diff_project(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    command = [sys.executable, "-m", "ms_fmk_transplt"]
    diff = subprocess.run([*command, "--diff", "."], capture_output=True, cwd=project, timeout=300)
    assert diff.returncode == 1, diff.stderr
    assert b's = "\x1b[31m"  # \x1b]0;title\x07 \xe2\x80\xae\n' in diff.stdout
    assert b"\\ No newline at end of file\n" in diff.stdout
    applied = subprocess.run(["git", "apply", "-p1", "-"], input=diff.stdout, cwd=copy)
    assert applied.returncode == 0
    fix = subprocess.run([*command, "--inplace", "-q", "."], capture_output=True, cwd=project)
    assert fix.returncode == 1 and b"parse.bidi_control" in fix.stdout, fix.stderr  # left: bidi
    for path in project.rglob("*.py"):
        assert (copy / path.relative_to(project)).read_bytes() == path.read_bytes(), path


def _on_a_terminal(*args: str, cwd: Path) -> bytes:
    """What the command shows with its stdout on a pseudo-terminal."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", *args],
        stdout=follower,
        stderr=subprocess.DEVNULL,
        cwd=cwd,
        timeout=300,
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the follower closed: all read
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert proc.returncode == 1
    return shown


@pytest.mark.parametrize("flags", [(), ("--color", "never")])
def test_diff_on_a_terminal_shows_escapes_escaped(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """On a terminal, coloured or not, a code line's ESC, BEL and bidi control are shown as
    ``\\x1b``, ``\\x07``, ``\\u202e``: none reaches the terminal raw."""
    shown = _on_a_terminal("--diff", *flags, "esc.py", cwd=_diff_project(tmp_path))
    assert b' s = "\\x1b[31m"  # \\x1b]0;title\\x07 \\u202e' in re.sub(
        rb"\x1b\[[0-9;]*m", b"", shown
    )
    assert b'"\x1b' not in shown and b"\x07" not in shown and "\u202e".encode() not in shown
    assert (b"\x1b" in shown) is (flags == ())  # rich's colours only
