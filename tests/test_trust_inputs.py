"""Issue 27, the inputs: only regular files are read (FIFOs, sockets and devices are listed and
skipped, in every mode, without blocking); any file name is handled and shown safely; bidi
control characters get a row; a malformed notebook is a skipped file, never an internal error."""

from __future__ import annotations

import csv
import io
import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import tables_for
from required_tools import need_module

from ms_fmk_transplt.engine.rules.parse.parse_errors import DECODE_ERROR, SYNTAX_ERROR
from ms_fmk_transplt.events import FileStatus
from ms_fmk_transplt.run.notebook import migrate_notebook
from ms_fmk_transplt.safe_names import shown
from ms_fmk_transplt.tables import load_tables

CUDA = b"import torch\nx = torch.zeros(3).cuda()\ny = torch.cuda.nccl.version()\n"
TIMEOUT = 60  # a run that blocks on a FIFO or reads /dev/zero never finishes: this fails it


def tool(*args: str | bytes, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "MS_FMK_TRANSPLT_CACHE": "off"}
    command = [sys.executable, "-m", "ms_fmk_transplt", *args]
    return subprocess.run(command, capture_output=True, cwd=cwd, env=env, timeout=TIMEOUT)


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _socket(path: Path) -> None:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()  # the socket file stays


def _zero_device(path: Path) -> None:
    zero = os.stat("/dev/zero").st_rdev
    try:
        os.mknod(path, stat.S_IFCHR | 0o644, zero)
    except PermissionError:
        pytest.skip("creating a character device needs root (CAP_MKNOD)")


SPECIALS = {
    "fifo": (_fifo, "a FIFO (named pipe)"),
    "socket": (_socket, "a socket"),
    "char_device": (_zero_device, "a character device"),
}


@pytest.fixture(params=sorted(SPECIALS))
def special(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    """A project ``p`` with a CUDA file and a special file named ``special.py``."""
    make, kind = SPECIALS[request.param]
    project = tmp_path / "p"
    project.mkdir()
    (project / "train.py").write_bytes(CUDA)
    make(project / "special.py")
    return project, kind


def test_migration_lists_and_skips_special_files(special: tuple[Path, str]) -> None:
    project, kind = special
    done = tool("-i", "p", "-o", "out", "-q", cwd=project.parent)
    assert done.returncode == 0, done.stderr
    out = project.parent / "out" / "p_msft"
    assert not (out / "special.py").exists() and not (out / "special.py").is_symlink()
    assert b"import torch_npu" in (out / "train.py").read_bytes()
    log = (out / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert f"WARNING special.py: {kind}, not a regular file: not read and not copied" in log


@pytest.mark.parametrize("given", ["folder", "file"])
def test_check_skips_special_files_with_a_notice(special: tuple[Path, str], given: str) -> None:
    project, kind = special
    target = "p" if given == "folder" else "p/special.py"
    done = tool("--check", target, cwd=project.parent)
    notice = f"ms_fmk_transplt: notice: p/special.py: {kind}, not a regular file: skipped"
    assert notice in done.stderr.decode()
    assert done.returncode == (1 if given == "folder" else 0), done.stderr  # train.py: findings


def test_inplace_skips_special_files(special: tuple[Path, str]) -> None:
    project, _ = special
    done = tool("--inplace", "p", cwd=project.parent)
    assert done.returncode == 1, done.stderr  # as ruff --fix: train.py's open work is left
    assert b"(2 fixed, 1 remaining)." in done.stderr
    assert b"import torch_npu" in (project / "train.py").read_bytes()
    assert not stat.S_ISREG(os.lstat(project / "special.py").st_mode)  # untouched


def test_a_file_replaced_by_a_fifo_is_refused_not_read(tmp_path: Path) -> None:
    """The race between listing and opening: the open descriptor is checked (fstat)."""
    from ms_fmk_transplt.safety.regular_files import NotRegularFile, read_regular

    os.mkfifo(tmp_path / "x.py")
    with pytest.raises(NotRegularFile, match="FIFO"):
        read_regular(tmp_path / "x.py")


ODD_NAMES = [
    b"bad\xff.py",  # not UTF-8
    b"nl\nx.py:1:1: forged.py",  # would forge a path:line:col line
    b"esc\x1b[31mred.py",  # a terminal escape
    "bidi\u202eyp.py".encode(),  # trojan source in a name
]


@pytest.fixture
def odd_project(tmp_path: Path) -> Path:
    project = tmp_path / "p"
    project.mkdir()
    for name in ODD_NAMES:
        with open(os.path.join(os.fsencode(project), name), "wb") as fh:
            fh.write(CUDA)
    return project


def _clean(text: str) -> None:
    """No raw control, bidi or undecodable character: every name went through ``shown``."""
    assert shown(text.replace("\n", "").replace("\r", "").replace("\t", "")) == text.replace(
        "\n", ""
    ).replace("\r", "").replace("\t", "")


def test_odd_file_names_are_migrated_under_their_real_bytes(odd_project: Path) -> None:
    done = tool("-i", "p", "-o", "out", "-q", cwd=odd_project.parent)
    assert done.returncode == 0, done.stderr
    out = odd_project.parent / "out" / "p_msft"
    for name in ODD_NAMES:
        data = Path(os.fsdecode(os.path.join(os.fsencode(out), name))).read_bytes()
        assert b"import torch_npu" in data, name
    for report in ("msFmkTranspltlog.txt", "change_list.csv", "unsupported_op.csv", "advice.csv"):
        text = (out / report).read_bytes().decode("utf-8")  # valid UTF-8
        for line in text.splitlines():
            _clean(line)
    log = (out / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert "analysed bad\\xff.py: 2 change(s)" in log
    assert "analysed nl\\nx.py:1:1: forged.py: 2 change(s)" in log
    assert "analysed esc\\x1b[31mred.py" in log and "analysed bidi\\u202eyp.py" in log
    rows = list(csv.reader(io.StringIO((out / "change_list.csv").read_text(encoding="utf-8"))))
    assert {r[0] for r in rows[1:]} >= {"bad\\xff.py", "nl\\nx.py:1:1: forged.py"}
    html = (out / "report.html").read_bytes().decode("utf-8")
    assert "bad\\xff.py" in html and "\x1b" not in html and "\u202e" not in html
    from openpyxl import load_workbook

    sheet = load_workbook(out / "unsupported_op.xlsx")["Unsupported"]
    assert "esc\\x1b[31mred.py" in {c.value for c in sheet["A"]}


@pytest.mark.parametrize("output_format", ["text", "github", "json", "sarif"])
def test_check_shows_odd_names_safely(odd_project: Path, output_format: str) -> None:
    done = tool("--check", "p", "--output-format", output_format, cwd=odd_project.parent)
    assert done.returncode == 1, done.stderr
    stdout = done.stdout.decode("utf-8")
    if output_format in ("json", "sarif"):
        json.loads(stdout)
    lines = stdout.splitlines()
    for line in lines:
        _clean(line)
    if output_format == "text":
        # no forged line: findings, and the tips under them (on one line each)
        assert all(line.startswith(("p/", "  = tip: ")) for line in lines), lines
        assert any(line.startswith("p/nl\\nx.py:1:1: forged.py:2:1: ") for line in lines)


def test_input_folder_with_undecodable_name(tmp_path: Path) -> None:
    project = os.path.join(os.fsencode(tmp_path), b"in\xff\x1b")
    os.mkdir(project)
    with open(os.path.join(project, b"m\xfe.py"), "wb") as fh:
        fh.write(CUDA)
    done = tool("-i", project, "-o", "out", "--output-format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["input"].endswith("in\\xff\\x1b") and summary["files"][0]["path"] == "m\\xfe.py"
    out = os.path.join(os.fsencode(tmp_path), b"out", b"in\xff\x1b_msft")
    assert os.path.isfile(os.path.join(out, b"m\xfe.py"))
    assert not list((tmp_path / "out").glob("*.interrupted.log"))
    log = Path(os.fsdecode(os.path.join(out, b"msFmkTranspltlog.txt"))).read_text("utf-8")
    assert "in\\xff\\x1b_msft" in log


def test_zoo_with_odd_model_names(tmp_path: Path) -> None:
    model = os.path.join(os.fsencode(tmp_path), b"zoo", b"m\xff\x1b")
    os.makedirs(model)
    with open(os.path.join(model, b"train.py"), "wb") as fh:
        fh.write(CUDA)
    done = tool("-i", "zoo", "-o", "out", "--zoo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = (tmp_path / "out" / "zoo_zoo_summary.csv").read_text(encoding="utf-8")
    assert rows.splitlines()[1].startswith("m\\xff\\x1b,")
    assert "\x1b" not in (tmp_path / "out" / "zoo_zoo_report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("plain/é 名.py", "plain/é 名.py"),
        ("a\nb\rc\td", "a\\nb\\rc\\td"),
        ("\x1b[2J\x7f\x85", "\\x1b[2J\\x7f\\x85"),
        ("x\u202ey\u2066\u200f\u061c\u2028", "x\\u202ey\\u2066\\u200f\\u061c\\u2028"),
        (os.fsdecode(b"bad\xff\xfe"), "bad\\xff\\xfe"),
        (b"raw\xff", "raw\\xff"),
    ],
)
def test_shown(name: str | bytes, expected: str) -> None:
    assert shown(name) == expected


def test_bidi_controls_get_a_row_wherever_they_are(tmp_path: Path) -> None:
    from ms_fmk_transplt.engine import migrate_source
    from ms_fmk_transplt.engine.rules.parse.guards import BIDI_CONTROL

    source = (
        'import torch\nx = torch.zeros(3).cuda()  # \u202e comment\ns = "\u2067text\u2069"\n'
    ).encode()
    result = migrate_source(source, "t.py", tables_for())
    rows = [(n.line, n.out_line, n.category) for n in result.notices if n.rule == BIDI_CONTROL]
    assert rows == [(2, 3, "review"), (3, 4, "review")]  # lines of the migrated file: 3, 4
    broken = "import torch\nx = torch.ones(1).cuda()\ny = 1 \u200f\n"  # not Python
    notices = migrate_source(broken.encode(), "b.py", tables_for()).notices
    assert [(n.rule, n.line) for n in notices] == [(SYNTAX_ERROR, 3), (BIDI_CONTROL, 3)]
    ignored = "x = 1\ns = '\u202e'  # msft: ignore[parse.bidi_control]\n"
    plain = migrate_source(ignored.encode(), "u.py", tables_for())
    assert not [n for n in plain.notices if n.rule == BIDI_CONTROL]
    quiet = migrate_source("x = '\u202e'\n".encode(), "v.py", tables_for())  # nothing to migrate
    assert [n.line for n in quiet.notices if n.rule == BIDI_CONTROL] == [1]


def _notebook(cells: object, **extra: object) -> bytes:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, **extra}).encode()


CODE = {"cell_type": "code", "source": "import torch\nx = torch.ones(1).cuda()\n"}
MALFORMED = {
    "not json": (b'{"cells": [', DECODE_ERROR),
    "not utf-8": (b'{"cells": ["\xff"]}', DECODE_ERROR),
    "nested 100000 deep": (b"[" * 100_000 + b"]" * 100_000, DECODE_ERROR),
    "infinity": (_notebook([CODE]).replace(b'"nbformat": 4', b'"nbformat": Infinity'), None),
    "huge float": (_notebook([CODE]).replace(b'"nbformat": 4', b'"nbformat": 1e999'), None),
    "top level a list": (b"[1, 2]", SYNTAX_ERROR),
    "cells a string": (_notebook("import torch"), SYNTAX_ERROR),
    "cells missing": (b'{"metadata": {}}', SYNTAX_ERROR),
    "cell not an object": (_notebook([CODE, 3]), SYNTAX_ERROR),
    "source a number": (_notebook([{"cell_type": "code", "source": 3}]), SYNTAX_ERROR),
    "source with a number": (_notebook([{"cell_type": "code", "source": ["x", 1]}]), SYNTAX_ERROR),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_notebook_is_a_skipped_file(case: str) -> None:
    data, rule = MALFORMED[case]
    result = migrate_notebook(data, "nb.ipynb", load_tables(), None)
    assert result.status == FileStatus.SKIPPED and result.output == data
    assert [n.rule for n in result.notices] == [rule or DECODE_ERROR]
    assert "copied unchanged" in result.notices[0].message


def test_wrong_metadata_types_and_huge_counts_are_kept() -> None:
    cells = [
        {**CODE, "metadata": "not a dict", "execution_count": 10**300, "outputs": "?"},
        {"cell_type": 5, "source": 7},  # not code: left alone
    ]
    data = _notebook(cells, metadata=[1, 2])
    result = migrate_notebook(data, "nb.ipynb", load_tables(), None)
    assert result.status == FileStatus.CHANGED
    after = json.loads(result.output)
    assert after["cells"][0]["execution_count"] == 10**300 and after["metadata"] == [1, 2]


hypothesis = need_module("hypothesis", "hypothesis is not installed")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
_CELL = st.fixed_dictionaries(
    {},
    optional={
        "cell_type": st.sampled_from(["code", "markdown", "raw"]) | _JSON,
        "source": st.text(max_size=60) | st.lists(st.text(max_size=30), max_size=4) | _JSON,
        "metadata": _JSON,
        "execution_count": _JSON,
    },
)
_NOTEBOOK = st.fixed_dictionaries(
    {}, optional={"cells": st.lists(_CELL | _JSON, max_size=4) | _JSON, "metadata": _JSON}
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(notebook=_NOTEBOOK | _JSON, cut=st.integers(min_value=0, max_value=400))
def test_fuzzed_notebooks_never_crash(notebook: object, cut: int) -> None:
    """Any JSON (whole or cut short) is migrated or skipped: no exception escapes."""
    data = json.dumps(notebook).encode()
    for candidate in (data, data[:cut]):
        result = migrate_notebook(candidate, "nb.ipynb", load_tables(), None)
        assert result.status in (FileStatus.CHANGED, FileStatus.UNCHANGED, FileStatus.SKIPPED)
        if result.status != FileStatus.CHANGED:
            assert result.output == candidate
