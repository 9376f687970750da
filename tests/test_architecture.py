"""The shape of the house: the package's imports form no cycle (records and reports are below the
pipeline, nothing runs back up), no module name appears twice, and the target version's tables
are loaded at the entry points only, then handed down."""

from __future__ import annotations

import ast
import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

from required_tools import needs_tool

PACKAGE = Path(__file__).resolve().parent.parent / "ms_fmk_transplt"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every module of the package that ``name`` imports, wherever the import statement is
    (top level, a function, ``if TYPE_CHECKING``)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{a.name}" for a in node.names)
    local = set()
    for module in found:
        if module == "ms_fmk_transplt" or module.startswith("ms_fmk_transplt."):
            short = module.removeprefix("ms_fmk_transplt").removeprefix(".")
            if short in modules and short != name:
                local.add(short)
    return local


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_package_imports_have_no_cycle() -> None:
    cycles = [sorted(c) for c in _cycles(_graph())]
    assert not cycles, f"import cycles: {cycles}"


def test_nothing_below_the_pipeline_imports_it() -> None:
    graph = _graph()
    below = [m for m in graph if m.split(".")[0] in ("report", "engine", "records")]
    assert below
    wrong = sorted(m for m in below if any(i == "run.pipeline" for i in graph[m]))
    assert not wrong, f"import the pipeline: {wrong}"


def _family_imports(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Modules outside engine/rules/ that import a rule family (a module of
    engine/rules/<family>/ or the family's package): the core reaches families only through
    the registry's door, the top-level modules of engine/rules/."""
    out = {}
    for module, imported in graph.items():
        if module.startswith("engine.rules"):
            continue
        families = sorted(i for i in imported if i.startswith("engine.rules.") and _in_family(i))
        if families:
            out[module] = families
    return out


def _in_family(module: str) -> bool:
    """engine.rules.<family> or a module in it (not engine.rules.registry and its kin, the
    door: they are modules, not folders)."""
    return (PACKAGE / "engine" / "rules" / module.split(".")[2]).is_dir()


def test_no_module_outside_the_rules_imports_a_family() -> None:
    wrong = _family_imports(_graph())
    assert not wrong, f"import a rule family, not through engine/rules/registry.py: {wrong}"


def test_the_family_import_check_finds_one() -> None:
    graph = {
        "engine.migrate": {"engine.rules.registry", "engine.rules.tf.tf_files"},
        "report.statistics": {"engine.rules.imports"},
        "engine.rules.registry": {"engine.rules.tf"},
        "pipeline": {"engine.rules.family_exports", "engine.rules.family_spec"},
    }
    assert _family_imports(graph) == {
        "engine.migrate": ["engine.rules.tf.tf_files"],
        "report.statistics": ["engine.rules.imports"],
    }


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


# Where the target version's tables may be loaded: the entry points of a run (which hand them
# down as arguments: to the project scan, the tree, each worker when it starts, the engine and
# the reports through RunResult.tables), the docs build (not a run), and the loader itself.
TABLE_LOADERS = {"run.pipeline": 1, "commands.paths_cli": 1, "commands.rule_docs": 1}
LOADER = "tables"


def _table_loads(source: str) -> int:
    """Uses of ``load_tables`` / ``_load_tables`` in a module: calls and references (a
    ``partial(load_tables, ...)`` too); an import under another name counts as one."""
    names = {"load_tables", "_load_tables"}
    uses = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id in names:
            uses += 1
        elif isinstance(node, ast.Attribute) and node.attr in names:
            uses += 1
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            uses += sum(1 for a in node.names if a.name.split(".")[-1] in names and a.asname)
    return uses


def test_the_tables_are_loaded_once_per_run_and_handed_down() -> None:
    loads = {
        name: _table_loads(path.read_text(encoding="utf-8"))
        for name, path in _modules().items()
        if name != LOADER and not name.startswith(LOADER + ".")
    }
    wrong = {n: c for n, c in loads.items() if c != TABLE_LOADERS.get(n, 0)}
    assert not wrong, f"load_tables used outside the entry points {sorted(TABLE_LOADERS)}: {wrong}"


def test_the_table_load_check_finds_loads() -> None:
    assert _table_loads("from ms_fmk_transplt.tables import load_tables\nx = 1\n") == 0
    assert _table_loads("t = load_tables(v).advice\n") == 1
    assert _table_loads("import ms_fmk_transplt.tables as t\nt.load_tables()\n") == 1
    assert _table_loads("f = functools.partial(load_tables, v)\n") == 1
    assert _table_loads("from ms_fmk_transplt.tables import load_tables as lt\n") == 1


def test_no_module_name_appears_twice() -> None:
    """Modules and packages; a rule family's folder (engine/rules/<family>) is named for its id
    prefix instead (the family ``engine`` of engine.internal_error)."""
    names: dict[str, list[str]] = {}
    for module in _modules():
        if module.count(".") == 2 and module.startswith("engine.rules."):
            continue
        names.setdefault(module.split(".")[-1], []).append(module)
    twice = {n: sorted(m) for n, m in names.items() if len(m) > 1 and n != ""}
    assert not twice, f"one name, several modules: {twice}"


@functools.lru_cache(maxsize=1)
def _python39() -> str | None:
    """A Python 3.9 with the tool's dependencies, if there is one."""
    python = os.environ.get("MS_FMK_TRANSPLT_PYTHON39") or shutil.which("python3.9")
    if python is None:
        return None
    check = (
        "import sys, libcst, click, rich, openpyxl, jsonschema; "
        "assert sys.version_info[:2] == (3, 9)"
    )
    done = subprocess.run([python, "-c", check], capture_output=True)
    return python if done.returncode == 0 else None


@needs_tool(
    "python3.9",
    _python39(),
    "no Python 3.9 with the dependencies found (MS_FMK_TRANSPLT_PYTHON39 or python3.9)",
)
def test_the_oldest_supported_python_imports_everything_and_migrates(tmp_path: Path) -> None:
    """requires-python = ">=3.9": every module imports on 3.9 (no ``X | Y`` evaluated at run
    time...) and a project migrates."""
    python = _python39()
    assert python is not None
    names = " ".join(f"ms_fmk_transplt.{m}" if m else "ms_fmk_transplt" for m in _modules())
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent), "MS_FMK_TRANSPLT_CACHE": "off"}
    code = f"import importlib, sys; [importlib.import_module(m) for m in {names.split()!r}]"
    subprocess.run([python, "-c", code], env=env, check=True)
    project = PACKAGE.parent / "fixtures" / "projects" / "imagenet"
    cmd = [python, "-m", "ms_fmk_transplt", "-q", "-i", str(project), "-o", str(tmp_path)]
    subprocess.run(cmd, env=env, check=True)
    assert (tmp_path / "imagenet_msft" / "report.html").is_file()


def test_every_package_is_installed() -> None:
    """pyproject.toml lists the packages (a non-editable install ships only those): every folder
    of Python modules is one of them."""
    text = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")
    listed = set(re.findall(r'^\s*"(ms_fmk_transplt[\w.]*)",$', text, re.M))
    folders = {
        ".".join(("ms_fmk_transplt", *p.parent.relative_to(PACKAGE).parts))
        for p in PACKAGE.rglob("__init__.py")
    }
    assert folders <= listed, sorted(folders - listed)


# The layers of ARCHITECTURE.md's table, top to bottom: each row's folders (``commands/``) and
# modules (``records.py``) under ms_fmk_transplt/.
_LAYER_ROW = re.compile(r"^\| (?P<layer>[a-z /]+) \| (?P<where>(?:`[\w/.]+`(?:, )?)+) \|", re.M)


def _layers() -> list[tuple[str, list[str]]]:
    text = (PACKAGE.parent / "ARCHITECTURE.md").read_text(encoding="utf-8")
    table = text[text.index("| layer | where") :]
    table = table[: table.index("\n\n")]
    return [
        (m["layer"], re.findall(r"`([\w/.]+)`", m["where"])) for m in _LAYER_ROW.finditer(table)
    ]


def _layer_of(module: str, layers: list[tuple[str, list[str]]]) -> int | None:
    """The index of the layer (0: the top) whose row names the module's folder or file."""
    path = _modules()[module].relative_to(PACKAGE).as_posix()
    for index, (_, where) in enumerate(layers):
        for place in where:
            if path == place or (place.endswith("/") and path.startswith(place)):
                return index
    return None


def _upward(graph: dict[str, set[str]], layers: list[tuple[str, list[str]]]) -> list[str]:
    level = {m: _layer_of(m, layers) for m in graph}
    return sorted(
        f"{m} ({layers[level[m]][0]}) -> {i} ({layers[level[i]][0]})"  # type: ignore[index]
        for m, imported in graph.items()
        for i in imported
        if level[m] is not None and level[i] is not None and level[i] < level[m]  # type: ignore[operator]
    )


def test_every_module_is_in_one_layer_of_the_table() -> None:
    layers = _layers()
    assert [name for name, _ in layers][:2] == ["entry", "run"]
    homeless = sorted(m for m in _modules() if _layer_of(m, layers) is None)
    assert not homeless, f"in no layer of ARCHITECTURE.md's table: {homeless}"


def test_every_module_imports_only_its_layer_and_those_below() -> None:
    upward = _upward(_graph(), _layers())
    assert not upward, "imports up the layers of ARCHITECTURE.md:\n" + "\n".join(upward)


def test_the_layer_check_finds_an_upward_import() -> None:
    layers = _layers()
    graph = {"run.pipeline": {"commands.cli"}, "commands.cli": {"run.pipeline"}}
    assert _upward(graph, layers) == ["run.pipeline (run) -> commands.cli (entry)"]
