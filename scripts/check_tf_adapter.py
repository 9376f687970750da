"""Check ``rules/tf_adapter.json``, the TensorFlow adapter table.

Usage::

    python scripts/check_tf_adapter.py [--source GIT_DIR [--rev REV]] [--estimator] [--table F]

Always: the table's shape (ms_fmk_transplt.tables.tf_adapter_table.shape_problems), and that
every option a constructor place names is a parameter of that constructor in the table.

``--source GIT_DIR``: a clone of https://github.com/Ascend/tensorflow (bare is fine), read at
``--rev`` (default ``master``) with ``git show``: each constructor's parameter list equals the
signature in tf_adapter/python/npu_bridge/estimator/npu/npu_config.py (parsed with ``ast``, never
imported), and every "session" option is a name tf_adapter/util/npu_attrs.cc reads.

With ``--source``, rules/tf_migration.json is checked too: every name the TensorFlow migration
writes exists in the adapter: the npu_bridge names (NPURunConfig, npu_config_proto,
get_npu_rank_id, NPUBroadcastGlobalVariablesHook, init_resource, npu_strategy.NPUStrategy,
npu_ops.dropout, ...) are bound by tf_adapter/python/npu_bridge/npu_init.py (or, after a module
it binds, defined in that module), the npu_device paths
(npu_device.train.optimizer.NpuLossScaleOptimizer, ...) by npu_device's ``_api`` packages.

``--estimator``: "RunConfig" equals ``inspect.signature`` of tf.estimator.RunConfig from an
importable tensorflow_estimator (skipped, with a line saying so, when it is not importable).

Exit status: 0 when consistent, 1 with one line per problem.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ms_fmk_transplt.tables.tf_adapter_table import shape_problems  # noqa: E402

TABLE = ROOT / "rules" / "tf_adapter.json"
CONFIG_PY = "tf_adapter/python/npu_bridge/estimator/npu/npu_config.py"
ATTRS_CC = "tf_adapter/util/npu_attrs.cc"
CLASSES = ("NPURunConfig", "ExperimentalConfig", "DumpConfig", "ProfilingConfig", "MemoryConfig")


def table_problems(data: dict[str, object]) -> list[str]:
    problems = shape_problems(data)
    if problems:
        return problems
    constructors = data["constructors"]
    assert isinstance(constructors, dict)
    for entry in data["options"]:  # type: ignore[attr-defined]
        for place in entry["places"]:
            if place in CLASSES and entry["name"] not in constructors[place]:
                problems.append(f"option {entry['name']!r}: not a parameter of {place}")
    for cls in CLASSES:
        listed = {e["name"] for e in data["options"] if cls in e["places"]}  # type: ignore[attr-defined]
        for param in constructors[cls]:
            if param not in listed:
                problems.append(f"constructor {cls}: parameter {param!r} has no option entry")
    return problems


def git_show(git_dir: str, rev: str, path: str) -> str:
    result = subprocess.run(
        ["git", "-C", git_dir, "show", f"{rev}:{path}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"cannot read {rev}:{path} in {git_dir}: {result.stderr.strip()}")
    return result.stdout


def signatures(source: str) -> dict[str, list[str]]:
    """``{class: [__init__ parameters after self]}`` of the module's top-level classes."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    found[node.name] = [a.arg for a in item.args.args[1:]]
    return found


def source_problems(data: dict[str, object], git_dir: str, rev: str) -> list[str]:
    constructors = data["constructors"]
    assert isinstance(constructors, dict)
    found = signatures(git_show(git_dir, rev, CONFIG_PY))
    problems = []
    for cls in CLASSES:
        if cls not in found:
            problems.append(f"{CONFIG_PY}@{rev}: no class {cls}")
        elif found[cls] != constructors.get(cls):
            problems.append(
                f"constructor {cls}: table {constructors.get(cls)} != source {found[cls]}"
            )
    read = set(re.findall(r'params\.count\("(\w+)"\)', git_show(git_dir, rev, ATTRS_CC)))
    for entry in data["options"]:  # type: ignore[attr-defined]
        if "session" in entry["places"] and entry["name"] not in read:
            problems.append(f"option {entry['name']!r}: {ATTRS_CC}@{rev} does not read it")
    unlisted = read - {e["name"] for e in data["options"] if "session" in e["places"]}  # type: ignore[attr-defined]
    problems += [
        f"session option {n!r} read by {ATTRS_CC} is not in the table" for n in sorted(unlisted)
    ]
    return problems


NPU_INIT = "tf_adapter/python/npu_bridge/npu_init.py"
NPU_DEVICE = "tf_adapter_2.x/python/npu_device"
MIGRATION = ROOT / "rules" / "tf_migration.json"


def bound_names(source: str) -> dict[str, str]:
    """Module-level names of a Python source -> what binds them ("def", or the import path)."""
    out: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = "def"
        elif isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Assign):
            out.update((t.id, "assign") for t in node.targets if isinstance(t, ast.Name))
    return out


def written_names(migration: dict[str, object]) -> tuple[set[str], set[str]]:
    """(npu_bridge names, npu_device paths) the migration writes into code."""
    raw: dict = migration  # type: ignore[type-arg]
    bridge = set(raw["renames"].values()) | {raw["run_config_init"], raw["config_proto_wrapper"]}
    for entry in raw["horovod"].values():
        bridge.update(entry[k] for k in ("call", "keras_call") if k in entry)
        for text in (entry.get("statement", ""), entry.get("append", "")):
            bridge.update(re.findall(r"(\w+)\(", text))
    bridge.update(f"{raw['strategy_module']}.{s}" for s in raw["strategies"].values())
    bridge.update(e["call"] for e in raw["npu_ops"].values())
    bridge.update(raw["loss_scale_tf1"].values())
    device = {p for p in raw["loss_scale"].values()}
    device.update(
        e.get("call", e.get("advise")) for e in raw["horovod_tf2"].values() if isinstance(e, dict)
    )
    device.add(raw["npu_device_open"].split("(")[0])
    return bridge, device


def migration_problems(git_dir: str, rev: str) -> list[str]:
    migration = json.loads(MIGRATION.read_text(encoding="utf-8"))
    bridge, device = written_names(migration)
    init = bound_names(git_show(git_dir, rev, NPU_INIT))
    problems = []
    for name in sorted(bridge):
        head, _, attr = name.partition(".")
        if head not in init:
            problems.append(
                f"tf_migration.json writes {name}: {NPU_INIT}@{rev} does not bind {head}"
            )
        elif attr and init[head] != "def":
            module = init[head].replace(".", "/")
            path = f"tf_adapter/python/{module}.py"
            if attr not in bound_names(git_show(git_dir, rev, path)):
                problems.append(f"tf_migration.json writes {name}: {path}@{rev} has no {attr}")
    for path in sorted(device):
        parts = path.split(".")[1:]  # (npu_device.)train.optimizer.NpuLossScaleOptimizer
        package = "/".join(["_api", *parts[:-1]]) if len(parts) > 1 else ""
        where = f"{NPU_DEVICE}/{package + '/' if package else ''}__init__.py"
        if parts[-1] not in bound_names(git_show(git_dir, rev, where)):
            problems.append(f"tf_migration.json writes {path}: {where}@{rev} has no {parts[-1]}")
    return problems


def estimator_problems(data: dict[str, object]) -> tuple[list[str], str]:
    try:
        module = importlib.import_module("tensorflow_estimator.python.estimator.run_config")
    except Exception as error:  # ImportError, or tensorflow itself failing to load
        return [], f"--estimator: skipped (tensorflow_estimator not importable: {error})"
    params = list(inspect.signature(module.RunConfig.__init__).parameters)[1:]
    table = data["constructors"]["RunConfig"]  # type: ignore[index]
    note = f"--estimator: RunConfig compared ({len(params)} parameters)"
    return (
        [] if params == table else [f"constructor RunConfig: table {table} != installed {params}"]
    ), note


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default=str(TABLE))
    parser.add_argument("--source", metavar="GIT_DIR")
    parser.add_argument("--rev", default="master")
    parser.add_argument("--estimator", action="store_true")
    args = parser.parse_args(argv)
    try:
        data = json.loads(Path(args.table).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        print(f"{args.table}: {error}")
        return 1
    problems = table_problems(data)
    notes = [f"{len(data.get('options', []))} options checked for shape"]
    if not problems and args.source:
        problems += source_problems(data, args.source, args.rev)
        problems += migration_problems(args.source, args.rev)
        notes.append(f"--source: compared with {args.rev} of {Path(args.source).name}")
        bridge, device = written_names(json.loads(MIGRATION.read_text(encoding="utf-8")))
        notes.append(f"--source: {len(bridge) + len(device)} names tf_migration.json writes found")
    if not problems and args.estimator:
        found, note = estimator_problems(data)
        problems += found
        notes.append(note)
    for line in problems or notes:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
