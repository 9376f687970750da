"""Check ``rules/libraries.json``, the library table (third-party training libraries on an NPU).

Usage::

    python scripts/check_libraries.py [--index] [--deepspeed DEEPSPEED_GIT_DIR]
    python scripts/check_libraries.py --write-page   # (re)write docs/libraries.md from the table

Always: the table's shape (every library names its public source with the version it was read
at; actions are manual/caveat or the entry is supported; per_run is true or false; a module
belongs to one library; an Ascend path names a package, a minimum version and how it is switched
on; argument entries name a keyword, an action and a tip).

``--index``: each Ascend path's package and minimum version exist on the package index
(``pip index versions``; needs the network or a configured index).

``--deepspeed DIR``: the DeepSpeed ops the table calls NPU-capable are exactly those with an NPU
op builder in that DeepSpeed checkout (a git directory, read with ``git show``/``ls-tree``).

How the table is rebuilt: each library's facts are read from the source its ``source`` field
names (a release's files, a wheel from the index, the project's documentation), at a newer
version when the table is refreshed; the field is then updated with the version read. The page
docs/libraries.md is a pure function of the table (checked to be current). Exit status: 0 when
the table is consistent, 1 with one line per problem.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "rules" / "libraries.json"
PAGE = ROOT / "docs" / "libraries.md"
VERSION = re.compile(r"\d+\.\d+|HEAD [0-9a-f]{7}|\(v?\d")
ACTIONS = {"manual", "caveat"}
# DeepSpeed op module -> the NPU op builder (op_builder/npu/<file>) that makes it run on the NPU
DEEPSPEED_BUILDERS = {
    "deepspeed.ops.adam": ("fused_adam.py", "cpu_adam.py"),
    "deepspeed.ops.adagrad": ("cpu_adagrad.py",),
    "deepspeed.ops.lion.DeepSpeedCPULion": ("cpu_lion.py",),
    "deepspeed.ops.aio": ("async_io.py",),
    "deepspeed.ops.transformer.inference": ("inference.py",),
}


def shape_problems(raw: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    owner: dict[str, str] = {}
    for lib in raw["libraries"]:
        name = lib.get("library", "?")
        if not VERSION.search(lib.get("source", "")):
            problems.append(f"{name}: source names no version it was read at")
        for row in lib.get("modules", []):
            module = row.get("module", "")
            if module in owner:
                problems.append(f"{name}: module {module} also listed by {owner[module]}")
            owner[module] = name
            if not row.get("supported") and (
                row.get("action") not in ACTIONS or not row.get("tip")
            ):
                problems.append(f"{name}: {module} needs an action (manual/caveat) and a tip")
            if not isinstance(row.get("per_run", False), bool):
                problems.append(f"{name}: {module}: per_run must be true or false")
            word = row.get("word", module.split(".")[0])
            if not isinstance(word, str) or word not in module.split("."):
                problems.append(f"{name}: {module}: word must be one of the module's names")
        ascend = lib.get("ascend")
        if ascend is not None and not all(ascend.get(k) for k in ("package", "min_version", "how")):
            problems.append(f"{name}: ascend needs package, min_version and how")
        for arg in lib.get("arguments", []):
            if not arg.get("keyword") or arg.get("action") not in ACTIONS or not arg.get("tip"):
                problems.append(f"{name}: argument {arg.get('keyword')} needs keyword, action, tip")
        for text in lib.get("strings", []):
            if not text.get("value") or text.get("action") not in ACTIONS or not text.get("tip"):
                problems.append(f"{name}: string {text.get('value')} needs value, action, tip")
        if not isinstance(lib.get("per_run", False), bool):
            problems.append(f"{name}: per_run must be true or false")
        if not lib.get("modules"):
            problems.append(f"{name}: lists no module")
    roots: dict[str, str] = {}
    for module, name in owner.items():
        root = module.split(".")[0]
        if roots.setdefault(root, name) != name:
            problems.append(f"top-level module {root} belongs to {roots[root]} and {name}")
    return problems


def index_problems(raw: dict[str, Any]) -> list[str]:
    problems = []
    for lib in raw["libraries"]:
        ascend = lib.get("ascend")
        if not ascend or ascend.get("from_source"):  # built from its repository
            continue
        out = subprocess.run(
            [sys.executable, "-m", "pip", "index", "versions", ascend["package"]],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        if ascend["min_version"] not in re.split(r"[\s,()]+", out):
            problems.append(
                f"{lib['library']}: {ascend['package']} {ascend['min_version']} "
                "not on the package index"
            )
    return problems


def deepspeed_problems(raw: dict[str, Any], git_dir: str) -> list[str]:
    listed = subprocess.run(
        ["git", "-C", git_dir, "ls-tree", "--name-only", "HEAD", "op_builder/npu/"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    files = {Path(p).name for p in listed}
    rows = {
        row["module"]: row
        for lib in raw["libraries"]
        if lib["library"] == "deepspeed"
        for row in lib["modules"]
    }
    problems = []
    for module, builders in DEEPSPEED_BUILDERS.items():
        if rows.get(module, {}).get("action") != "caveat":
            problems.append(f"deepspeed: {module} should be a caveat (NPU op builder)")
        missing = [b for b in builders if b not in files]
        if missing:
            problems.append(f"deepspeed: op_builder/npu/ lacks {', '.join(missing)} for {module}")
    return problems


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render_page(raw: dict[str, Any]) -> str:
    """docs/libraries.md: the libraries, their Ascend paths and sources, then each entry."""
    out = [
        "# Third-party libraries on an NPU host",
        "",
        "Generated from `rules/libraries.json` by `python scripts/check_libraries.py "
        "--write-page`; do not edit. The rows these entries give are `libraries.cuda_only` "
        "and `libraries.npu_path` (one row per file and library; see docs/rules/). An entry "
        "marked *per run* (`per_run` in the table) is CUDA-only in the library's own code: the "
        "action is in the library (patch or migrate it once), not in the file, so its manual "
        "rows in three or more files are one row for the run, the log listing every file.",
        "",
        "| library | modules | Ascend path | source (version read) |",
        "| --- | --- | --- | --- |",
    ]
    for lib in raw["libraries"]:
        roots = sorted({m["module"].split(".")[0] for m in lib["modules"]})
        ascend = lib.get("ascend")
        path = (
            f"`{ascend['package']}` >= {ascend['min_version']}: {ascend['how']}"
            if ascend
            else "none"
        )
        out.append(
            f"| {lib['library']} | {', '.join(f'`{r}`' for r in roots)} | {_cell(path)} "
            f"| {_cell(lib['source'])} |"
        )
    for lib in raw["libraries"]:
        out += ["", f"## {lib['library']}", "", "| API or argument | action | what to do |"]
        out.append("| --- | --- | --- |")
        for row in lib["modules"]:
            action = "supported" if row.get("supported") else row["action"]
            if not row.get("supported") and row.get("per_run", lib.get("per_run", False)):
                action += ", per run"
            out.append(f"| `{row['module']}` | {action} | {_cell(row.get('tip', ''))} |")
        for arg in lib.get("arguments", []):
            values = " / ".join(repr(v) for v in arg.get("values", [])) or "true"
            calls = f" in {', '.join(arg['calls'])}(...)" if arg.get("calls") else ""
            out.append(
                f"| `{arg['keyword']}=` {_cell(values)}{calls} | {arg['action']} "
                f"| {_cell(arg['tip'])} |"
            )
        for text in lib.get("strings", []):
            where = "a dict key" if text.get("dict_key") else "a string"
            out.append(f"| {where} `{text['value']!r}` | {text['action']} | {_cell(text['tip'])} |")
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", action="store_true", help="check versions on the index")
    parser.add_argument("--deepspeed", metavar="GIT_DIR", help="a DeepSpeed git directory")
    parser.add_argument("--write-page", action="store_true", help="rewrite docs/libraries.md")
    args = parser.parse_args()
    raw = json.loads(TABLE.read_text(encoding="utf-8"))
    if args.write_page:
        PAGE.write_text(render_page(raw), encoding="utf-8", newline="\n")
        return 0
    problems = shape_problems(raw)
    if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != render_page(raw):
        problems.append("docs/libraries.md is out of date (--write-page)")
    if args.index:
        problems += index_problems(raw)
    if args.deepspeed:
        problems += deepspeed_problems(raw, args.deepspeed)
    for problem in problems:
        print(f"rules/libraries.json: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
