"""What program_model.py reads of each TensorFlow module, in one parse, cached by its content:
the evidence of the TensorFlow it runs on (engine/rules/tf/tf_versions.py), the calls that pass
Horovod on as a value and the module's functions with their parameters
(engine/rules/tf/horovod_values.py). A cached value of any other shape is read again."""

from __future__ import annotations

from dataclasses import dataclass, field

from ms_fmk_transplt.engine.rules.family_exports import (
    KINDS,
    Evidence,
    Pass,
    api_evidence,
    bindings,
    horovod_passes,
    module_functions,
)
from ms_fmk_transplt.engine.spans.shared_tree import analysable_tree
from ms_fmk_transplt.scan.cache import Cache
from ms_fmk_transplt.tables.tf_migration_table import TfMigrationTable


@dataclass(frozen=True)
class TfModule:
    evidence: Evidence = field(default_factory=dict)
    passes: list[Pass] = field(default_factory=list)
    functions: dict[str, list[str]] = field(default_factory=dict)


def read_module(source: bytes, table: TfMigrationTable) -> TfModule:
    tree = analysable_tree(source)
    if tree is None:
        return TfModule()
    bound = bindings(tree)
    return TfModule(
        api_evidence(tree, bound, table),
        horovod_passes(tree, bound, table),
        module_functions(tree),
    )


def scan_module(
    rel_path: str, source: bytes, table: TfMigrationTable, cache: Cache | None
) -> TfModule:
    """The module's facts, from the cache when its content was read before."""
    if cache is None:
        return read_module(source, table)
    key = cache.key("tf module:" + rel_path, source)
    entry = cache.get(key)
    found = _from_cache(entry.value) if entry is not None else None
    if found is not None:
        return found
    found = read_module(source, table)
    cache.put(
        key,
        {
            "evidence": {k: [name, line] for k, (name, line) in found.evidence.items()},
            "passes": [list(p) for p in found.passes],
            "functions": found.functions,
        },
    )
    return found


def _strings(value: object) -> list[str] | None:
    if type(value) is not list or any(type(v) is not str for v in value):
        return None
    return list(value)


def _from_cache(value: object) -> TfModule | None:
    """A cached value of scan_module, or None for anything else."""
    if type(value) is not dict or set(value) != {"evidence", "passes", "functions"}:
        return None
    evidence, passes, functions = value["evidence"], value["passes"], value["functions"]
    if type(evidence) is not dict or type(passes) is not list or type(functions) is not dict:
        return None
    found = TfModule()
    for kind, item in evidence.items():
        if kind not in KINDS or type(item) is not list or len(item) != 2:
            return None
        if type(item[0]) is not str or type(item[1]) is not int:
            return None
        found.evidence[kind] = (item[0], item[1])
    for item in passes:
        types = [type(v) for v in item] if type(item) is list else []
        if types != [str, int, str, str, int]:
            return None
        found.passes.append((item[0], item[1], item[2], item[3], item[4]))
    for name, parameters in functions.items():
        names = _strings(parameters)
        if type(name) is not str or names is None or "*" not in names:
            return None
        found.functions[name] = names
    return found
