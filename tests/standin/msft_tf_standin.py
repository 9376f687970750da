"""TEST DOUBLE core shared by the npu_bridge and npu_device stand-ins (never shipped to users).

* ``record(event, **details)``: the call log. Every entry goes to ``LOG`` (this process) and, when
  ``MSFT_STANDIN_LOG`` names a file, is appended to it as one JSON line, so a test that runs a
  migrated script in a subprocess can read what the script called, in order.
* ``check_option(name, value, place)``: an Ascend adapter option checked against the option
  table ``rules/tf_adapter.json`` through ``ms_fmk_transplt.tables.tf_adapter_table`` (so the
  repository root must be importable too); a problem raises ``ValueError`` with the table's
  message, prefixed by the place.
* the session gate: ``install_session_gate()`` wraps ``BaseSession.__init__`` (Session,
  InteractiveSession and the sessions MonitoredTrainingSession creates) so that a config without
  the ``NpuOptimizer`` custom optimizer raises, its ``parameter_map`` values are checked, and
  TensorFlow receives a copy without the entry (grappler on the CPU does not know it).
"""

from __future__ import annotations

import json
import os
from typing import Any

NPU_OPTIMIZER = "NpuOptimizer"
LOG: list[dict[str, Any]] = []


def record(event: str, **details: Any) -> None:
    entry = {"event": event, **{k: _jsonable(v) for k, v in details.items()}}
    LOG.append(entry)
    path = os.environ.get("MSFT_STANDIN_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return repr(value)


# --- the option table -------------------------------------------------------------------------

_TABLE: list[Any] = []


def table() -> Any:
    """The project's TfAdapterTable (rules/tf_adapter.json), loaded once."""
    if not _TABLE:
        from ms_fmk_transplt.tables import rules_dir
        from ms_fmk_transplt.tables.tf_adapter_table import loads

        _TABLE.append(loads((rules_dir() / "tf_adapter.json").read_text(encoding="utf-8")))
    return _TABLE[0]


def check_option(name: str, value: object, place: str) -> None:
    problem = table().problem(name, value, place)
    if problem:
        record("option.rejected", name=name, value=value, place=place)
        raise ValueError(f"{place}: {problem}")


def check_requirements(options: dict[str, Any], place: str) -> None:
    """The options an option that is switched on needs (enable_dump needs dump_path, ...)."""
    missing = table().missing_requirements(set(options), options)
    if missing:
        record("option.rejected", place=place, missing=missing)
        raise ValueError(f"{place}: " + "; ".join(missing))


# --- session configs --------------------------------------------------------------------------


def npu_entry(config: Any) -> Any:
    """The NpuOptimizer custom optimizer of a ConfigProto, or None."""
    if config is None:
        return None
    for custom in config.graph_options.rewrite_options.custom_optimizers:
        if custom.name == NPU_OPTIMIZER:
            return custom
    return None


def attr_value(attr: Any) -> Any:
    """The Python value of a tensorflow AttrValue (bytes read as text)."""
    kind = attr.WhichOneof("value")
    if kind is None:
        return None
    value = getattr(attr, kind)
    if kind == "s":
        return value.decode("utf-8", "replace")
    if kind == "list":
        return [v.decode() if isinstance(v, bytes) else v for v in (*value.s, *value.i)]
    return value


def check_session_config(config: Any, kind: str) -> Any:
    """Raise unless ``config`` carries NpuOptimizer with valid options; return a copy for
    TensorFlow without it."""
    entry = npu_entry(config)
    if entry is None:
        record("session.refused", kind=kind)
        raise RuntimeError(
            f"{kind} created without the NpuOptimizer custom optimizer in its config "
            "(TEST DOUBLE of the Ascend adapter: the migration must pass npu_config_proto(...))"
        )
    options = {name: attr_value(entry.parameter_map[name]) for name in sorted(entry.parameter_map)}
    for name, value in options.items():
        check_option(name, value, "session")
    check_requirements(options, "session")
    record("session", kind=kind, options=sorted(options))
    clean = type(config)()
    clean.CopyFrom(config)
    rewrite = clean.graph_options.rewrite_options
    kept = [c for c in rewrite.custom_optimizers if c.name != NPU_OPTIMIZER]
    del rewrite.custom_optimizers[:]
    for custom in kept:
        rewrite.custom_optimizers.add().CopyFrom(custom)
    return clean


_GATE: list[Any] = []


def install_session_gate() -> None:
    """Wrap BaseSession.__init__ once (Session, InteractiveSession, MonitoredTrainingSession)."""
    if _GATE:
        return
    from tensorflow.python.client import session as session_lib

    original = session_lib.BaseSession.__init__

    def gated_init(self: Any, target: Any = "", graph: Any = None, config: Any = None) -> None:
        clean = check_session_config(config, type(self).__name__)
        original(self, target, graph, clean)

    session_lib.BaseSession.__init__ = gated_init
    _GATE.append(original)
