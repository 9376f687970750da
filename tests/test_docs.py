"""The user guide, README.md and docs/: every page is reachable from docs/index.md and README,
every relative link resolves (its file and its #anchor), every table renders as a table, and the
commands a page shows under a ``<!-- runs -->`` line run and print what the page shows. README's
two commands: the test command is .ci/run's last line (tests/test_required_tools.py); the
migration of the first one is run here on the bundled sample.

A runnable block is an indented code block right after a ``<!-- runs -->`` line: each ``$ ``
line is a command, run by bash from a scratch folder holding ``fixtures`` (a link to the
repository's), with ``ms_fmk_transplt`` on PATH (this checkout); the lines after it, up to the
next command, are its standard output exactly (a command the page shows no output for may print
anything). Every command must exit 0 (a page shows another exit code with ``; echo "exit $?"``)."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token
from required_tools import need_tool, needs_tool

from ms_fmk_transplt.errors import (
    EXIT_BAD_INPUT,
    EXIT_FILE_FAILURES,
    EXIT_INTERNAL_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
)
from ms_fmk_transplt.user_options.option_schema import KEYS, SCHEMA

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = sorted(p for p in DOCS.glob("*.md") if p.name != "index.md")
# every Markdown file whose links are checked: the guide, the generated pages, ARCHITECTURE.md
LINKED = sorted({README, ROOT / "ARCHITECTURE.md", *DOCS.rglob("*.md")})
RUNS = "<!-- runs -->"


@functools.cache
def tokens(path: Path) -> list[Token]:
    return MarkdownIt("commonmark").enable("table").parse(path.read_text(encoding="utf-8"))


def links(path: Path) -> list[str]:
    return [
        str(child.attrs["href"])
        for token in tokens(path)
        if token.type == "inline"
        for child in token.children or ()
        if child.type == "link_open"
    ]


def slug(text: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    items = tokens(path)
    for at, token in enumerate(items[:-1]):
        if token.type == "heading_open":
            words = "".join(c.content for c in items[at + 1].children or () if c.content)
            name, n = slug(words), 1
            while name in found:  # GitHub numbers a repeated heading's anchor
                name, n = f"{slug(words)}-{n}", n + 1
            found.add(name)
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_page_is_linked_from_the_index_and_readme(page: Path) -> None:
    assert page.name in links(DOCS / "index.md"), f"docs/index.md does not link {page.name}"
    assert f"docs/{page.name}" in links(README), f"README.md does not link docs/{page.name}"


def test_readme_links_the_index_and_stays_short() -> None:
    assert "docs/index.md" in links(README)
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


@pytest.mark.parametrize("page", LINKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for href in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", href):  # https:, mailto: ...
            continue
        name, _, fragment = href.partition("#")
        target = (page.parent / name).resolve() if name else page
        if not target.exists():
            broken.append(f"{href}: no such file")
        elif fragment and target.suffix == ".md" and fragment not in anchors(target):
            broken.append(f"{href}: no heading #{fragment} in {target.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: p.name)
def test_no_table_row_renders_as_text(page: Path) -> None:
    """A table broken by a blank line or a stray ``|`` leaves its rows as a paragraph."""
    items = tokens(page)
    loose = [
        token.content.splitlines()[0]
        for before, token in zip(items, items[1:])
        if before.type == "paragraph_open" and token.content.startswith("|")
    ]
    assert not loose, f"{page.name}: rows outside a table: {loose}"


def table_rows(page: Path, header: str) -> list[list[str]]:
    """The rows (cells' source text) of the table of ``page`` whose first header is ``header``."""
    tables: list[list[list[str]]] = []
    inside = False
    for token in tokens(page):
        if token.type in ("table_open", "table_close"):
            inside = token.type == "table_open"
            tables += [[]] if inside else []
        elif inside and token.type == "tr_open":
            tables[-1].append([])
        elif inside and token.type == "inline":
            tables[-1][-1].append(token.content)
    return next(t[1:] for t in tables if t and t[0] and t[0][0] == header)


def test_the_usage_table_holds_the_options_that_change_code() -> None:
    firsts = [row[0] for row in table_rows(DOCS / "options.md", "option")]
    for option in (
        "`-r, --rule JSON`",
        "`-s, --specify-device`",
        "`-sim, --similar`",
        "`distributed -m MAIN [-t MODEL ...] [--no-rank-guards]`",
        "`--deps DIR|auto`",
    ):
        assert option in firsts, option


@functools.cache
def code_texts() -> frozenset[str]:
    """The text of every code span and code block of README and the pages."""
    found: set[str] = set()
    for page in [README, *PAGES]:
        for token in tokens(page):
            if token.type in ("code_block", "fence"):
                found.add(token.content)
            for child in token.children or ():
                if child.type == "code_inline":
                    found.add(child.content)
    return frozenset(found)


@pytest.mark.parametrize(
    "flag", sorted({d for o in SCHEMA for d in o.decls if d.startswith("-")}), ids=str
)
def test_every_option_is_documented(flag: str) -> None:
    """Each flag of the schema (every command's) is in a code span or block of the guide."""
    alone = re.compile(rf"(^|[\s,/(\[]){re.escape(flag)}($|[\s=,/)\]])", re.MULTILINE)
    assert any(alone.search(text) for text in code_texts()), f"{flag}: in no page"


def test_every_pyproject_key_is_documented() -> None:
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    assert not [key for key in KEYS if f"`{key}`" not in page]


def test_every_exit_code_is_documented() -> None:
    rows = table_rows(DOCS / "first-migration.md", "code")
    codes = (EXIT_OK, EXIT_FILE_FAILURES, EXIT_BAD_INPUT, EXIT_INTERNAL_ERROR, EXIT_INTERRUPTED)
    assert [row[0] for row in rows] == [str(code) for code in codes]


def runnable_blocks() -> Iterator[tuple[str, str]]:
    for page in [README, *PAGES]:
        items = tokens(page)
        for at, token in enumerate(items[:-1]):
            if token.type == "html_block" and token.content.strip() == RUNS:
                block = items[at + 1]
                assert block.type in ("code_block", "fence"), f"{page.name}: {RUNS} before text"
                yield f"{page.name}:{(block.map or [0])[0] + 1}", block.content


def scratch_folder(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A folder holding ``fixtures`` and an environment whose ``ms_fmk_transplt`` is this
    checkout's (not an installed copy)."""
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures", target_is_directory=True)
    bin_dir = tmp_path / ".bin"
    bin_dir.mkdir()
    shim = bin_dir / "ms_fmk_transplt"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ms_fmk_transplt "$@"\n')
    shim.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
        "LC_ALL": "C",
        "COLUMNS": "80",
        "NO_COLOR": "1",
        "MS_FMK_TRANSPLT_CACHE": "off",
    }
    env.pop("FORCE_COLOR", None)
    return tmp_path, env


def run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def commands(block: str) -> list[tuple[str, list[str]]]:
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"output before the first command: {line!r}"
            steps[-1][1].append(line.rstrip())
    return steps


@pytest.mark.parametrize("where, block", list(runnable_blocks()), ids=lambda v: v[:40])
def test_the_commands_a_page_shows_run(tmp_path: Path, where: str, block: str) -> None:
    folder, env = scratch_folder(tmp_path)
    for command, expected in commands(block):
        done = run(command, folder, env)
        assert done.returncode == 0, f"{where}: {command}\n{done.stdout}{done.stderr}"
        while expected and not expected[-1]:
            expected.pop()
        shown = [line.rstrip() for line in done.stdout.rstrip("\n").splitlines()]
        assert shown == expected or not expected, f"{where}: {command}"


def test_the_pages_have_runnable_commands() -> None:
    """The pages that show the tool at work on the bundled sample keep showing it run."""
    pages = {where.split(":")[0] for where, _ in runnable_blocks()}
    assert {"first-migration.md", "kits.md", "ci.md"} <= pages


def test_readme_first_command_migrates_the_sample(tmp_path: Path) -> None:
    """README's first command: install (.ci/run installs the wheel and migrates the sample with
    it), then the migration, which writes the folder README names."""
    text = README.read_text(encoding="utf-8")
    first = next(t for t in tokens(README) if t.type == "code_block").content.strip()
    steps = first.split(" && ")
    assert steps[:3] == ["python3 -m venv .venv", ". .venv/bin/activate", "pip install ."], steps
    writes = re.search(r"\(writes `([^`]+)`\)", text)
    assert writes, "README no longer says what the first command writes"
    folder, env = scratch_folder(tmp_path)
    done = run(" && ".join(steps[3:]), folder, env)
    assert done.returncode == 0, done.stderr
    written = folder / writes.group(1)
    assert (written / "report.html").is_file() and (written / "change_list.csv").is_file()


@needs_tool("git", shutil.which("git"), "git not installed")
def test_the_documented_local_pre_commit_hook_runs(tmp_path: Path) -> None:
    """The ``repo: local`` configuration of docs/ci.md, with this checkout as the dependency,
    under the real pre-commit."""
    pre_commit = shutil.which("pre-commit", path=str(Path(sys.executable).parent))
    need_tool("pre-commit", pre_commit, "pre-commit not installed")
    config = next(
        t.content
        for t in tokens(DOCS / "ci.md")
        if t.type == "fence" and "repo: local" in t.content
    )
    placeholder = "<path of the wheel, or of your ms_fmk_transplt clone>"
    assert placeholder in config
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".pre-commit-config.yaml").write_text(config.replace(placeholder, str(ROOT)))
    (repo / "train.py").write_text("import torch\n\nx = torch.ones(2).cuda()\n")
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pc-cache"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    git = ["git", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True, env=env)
    subprocess.run([*git, "add", "."], check=True, env=env)
    check = subprocess.run(
        [pre_commit, "run", "ms-fmk-transplt-check", "--files", "train.py"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert check.returncode == 1, check.stdout + check.stderr
    assert "train.py:3:5: tensor_methods.cuda_call .cuda() -> .npu()" in check.stdout
