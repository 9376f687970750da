"""The TensorFlow adapter table (rules/tf_adapter.json): the options of the Ascend TensorFlow
adapter (NPURunConfig and its config objects, the NpuOptimizer session options, the TF2
npu_device global options), the constructors' parameter orders, and the TensorFlow APIs the
adapter's support lists call unsupported or deprecated.

``problem`` judges one option as written (name, constant value, where it is given),
``parse_value`` reads a ``--npu-option NAME=VALUE`` value, ``missing_requirements`` names the
options another one needs. scripts/check_tf_adapter.py checks the table against the adapter's
source.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any, Callable

from ms_fmk_transplt.safe_names import shown

PLACES = (
    "NPURunConfig",
    "ExperimentalConfig",
    "DumpConfig",
    "ProfilingConfig",
    "MemoryConfig",
    "session",
    "initialize_system",
    "npu_device",
)
KINDS = ("bool", "int", "float", "str", "path", "object")
STATUSES = ("supported", "not_supported", "deprecated", "no_effect")
CONSTRUCTORS = (*PLACES[:5], "RunConfig")
API_STATUSES = ("unsupported", "deprecated")


class _Unknown:
    """A value that is not a Python constant (a variable, a call): only the name is checked."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()

_PROFILING_ITEMS = ("training_trace", "task_trace", "op_trace")
_STEP_ITEM = re.compile(r"(\d+)(?:-(\d+))?")
_DEVICE_LIST = re.compile(r"\d+(,\d+)*")


def _check_accelerate(text: str) -> bool:
    parts = text.split("|")
    if len(parts) != 3 or parts[0] not in ("fast", "fast1"):
        return False
    try:
        ratio = float(parts[2])
    except ValueError:
        return False
    if parts[1] == "step":
        return 0.2 <= ratio <= 0.9
    return parts[1] == "loss" and 1.01 <= ratio <= 1.5


def _check_dump_step(text: str) -> bool:
    items = text.split("|")
    if len(items) > 100:
        return False
    for item in items:
        match = _STEP_ITEM.fullmatch(item)
        if match is None or (match[2] is not None and int(match[1]) >= int(match[2])):
            return False
    return True


def _profiling_items(text: str) -> list[str] | None:
    """The items of a colon-separated profiling_options value; None for the JSON form."""
    return None if text.lstrip().startswith("{") else text.split(":")


def _check_profiling(text: str) -> bool:
    items = _profiling_items(text)
    if items is None:
        try:
            return isinstance(json.loads(text), dict)
        except ValueError:
            return False
    if not items or any(item not in _PROFILING_ITEMS for item in items):
        return False
    return "op_trace" not in items or len(items) == 1


CHECKS: dict[str, tuple[Callable[[str], bool], str]] = {
    "accelerate_train_mode": (
        _check_accelerate,
        '"fast|step|R" with R in 0.2-0.9 or "fast|loss|R" with R in 1.01-1.5 '
        "(first field fast or fast1)",
    ),
    "dump_step": (_check_dump_step, 'steps or ranges joined by "|", such as "0|5|10-20"'),
    "profiling_options": (
        _check_profiling,
        "training_trace, task_trace and/or op_trace joined by ':' (op_trace alone), "
        "or a JSON object string",
    ),
    "device_list": (lambda text: _DEVICE_LIST.fullmatch(text) is not None, 'like "0,1,2"'),
}


@dataclass(frozen=True)
class NpuOption:
    name: str
    places: frozenset[str]
    kind: str  # bool | int | float | str | path | object (any value, not checked)
    values: tuple[object, ...]  # the allowed values; empty: free
    minimum: float | None
    maximum: float | None
    check: str  # "" or a key of CHECKS
    requires: tuple[str, ...]  # options that must be set too when this one is switched on
    status: str  # supported | not_supported | deprecated | no_effect
    summary: str
    seed: str  # "000" / "001" / "002", "" when only the source has it

    def value_problem(self, value: object) -> str | None:
        """Why the constant ``value`` is not valid for this option; None when it is."""
        if value is UNKNOWN or value is None or self.kind == "object":
            return None
        expected = {"bool": (bool,), "int": (int,), "float": (int, float)}.get(self.kind, (str,))
        if not isinstance(value, expected) or (self.kind == "float" and isinstance(value, bool)):
            return f"{self.name!r} takes {_kind_text(self.kind)}{_allowed(self)} (got {value!r})"
        if self.values and value not in self.values:
            allowed = ", ".join(_show(v) for v in self.values)
            return f"{self.name!r} must be one of {allowed} (got {_show(value)})"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if self.minimum is not None and value < self.minimum:
                return f"{self.name!r} must be >= {_num(self.minimum)} (got {value!r})"
            if self.maximum is not None and value > self.maximum:
                return f"{self.name!r} must be <= {_num(self.maximum)} (got {value!r})"
        if self.check and isinstance(value, str) and not CHECKS[self.check][0](value):
            return f"{self.name!r} must be {CHECKS[self.check][1]} (got {value!r})"
        return None

    def switched_on(self, value: object) -> bool:
        """Whether a set option with ``value`` puts its ``requires`` in force."""
        if value is UNKNOWN:
            return self.kind not in ("bool", "int") and self.check != "profiling_options"
        if value is None or value is False or value == 0 or value == "":
            return False
        if self.check == "profiling_options" and isinstance(value, str):
            items = _profiling_items(value)
            return items is not None and bool({"training_trace", "task_trace"} & set(items))
        return True


def _kind_text(kind: str) -> str:
    return {"bool": "True or False", "int": "an integer", "float": "a number"}.get(kind, "a string")


def _show(value: object) -> str:
    return f'"{shown(value)}"' if isinstance(value, str) else repr(value)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


@dataclass(frozen=True, eq=False)  # compared and hashed by identity (loaded once)
class TfAdapterTable:
    options: dict[str, NpuOption]
    constructors: dict[str, tuple[str, ...]]
    # TensorFlow version -> {"tensorflow.X": (status, tip)}
    api_support: dict[str, dict[str, tuple[str, str]]]
    source: dict[str, Any]

    def problem(self, name: str, value: object, place: str) -> str | None:
        """One line on what is wrong with option ``name`` given ``value`` in ``place``; None
        when the option exists there and the constant is valid (UNKNOWN: the name only)."""
        option = self.options.get(name)
        if option is None:
            return f"unknown NPU option {name!r}{self._suggestion(name, place)}"
        if place not in option.places:
            where = ", ".join(p for p in PLACES if p in option.places)
            return f"{name!r} is not an option of {place} (it is one of {where})"
        if option.status == "not_supported":
            return f"{name!r} is not supported by the adapter"
        return option.value_problem(value)

    def _suggestion(self, name: str, place: str) -> str:
        here = [n for n, o in self.options.items() if place in o.places]
        close = difflib.get_close_matches(name, here or list(self.options), n=1, cutoff=0.75)
        return f" (did you mean {close[0]!r}?)" if close else ""

    def notice(self, name: str) -> str | None:
        """One line for an option that exists but is deprecated or has no effect."""
        option = self.options.get(name)
        if option is None or option.status in ("supported", "not_supported"):
            return None
        if option.status == "deprecated":
            return f"{name!r} is deprecated in the adapter: {option.summary}"
        return f"{name!r} no longer has an effect: {option.summary}"

    def parse_value(self, name: str, text: str) -> object:
        """The value of ``--npu-option NAME=VALUE`` converted by the option's kind; ValueError
        naming the option and what it accepts."""
        option = self.options.get(name)
        if option is None:
            raise ValueError(f"unknown NPU option {name!r}{self._suggestion(name, '')}")
        try:  # bytes that are not UTF-8 (from the command line) cannot be written into a file
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{name!r}: the value is not UTF-8 text (got {_show(text)})") from None
        value: object = text
        if option.kind == "bool":
            lowered = {"true": True, "1": True, "false": False, "0": False}
            if text.strip().lower() not in lowered:
                raise ValueError(f"{name!r} takes true/false/1/0 (got {text!r})")
            value = lowered[text.strip().lower()]
        elif option.kind in ("int", "float"):
            try:
                value = int(text) if option.kind == "int" else float(text)
            except ValueError:
                raise ValueError(
                    f"{name!r} takes {_kind_text(option.kind)}{_allowed(option)} (got {text!r})"
                ) from None
        problem = option.value_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    def missing_requirements(self, names_set: set[str], values: dict[str, object]) -> list[str]:
        """One line per option in ``names_set`` switched on without an option it requires."""
        lines = []
        for name in sorted(names_set):
            option = self.options.get(name)
            if option is None or not option.switched_on(values.get(name, UNKNOWN)):
                continue
            missing = [r for r in option.requires if r not in names_set]
            if missing:
                lines.append(f"{name!r} is set but {_and(missing)} {_is_are(missing)} not")
        return lines

    def api(self, version: str, qualified: str) -> tuple[str, str] | None:
        """(status, tip) of a ``tensorflow.X`` API in a support list, None when not listed."""
        return self.api_support.get(version, {}).get(qualified)


def _allowed(option: NpuOption) -> str:
    return f" ({', '.join(_show(v) for v in option.values)})" if option.values else ""


def _and(names: list[str]) -> str:
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _is_are(names: list[str]) -> str:
    return "is" if len(names) == 1 else "are"


_OPTION_KEYS = {"name", "places", "kind", "check", "requires", "status", "summary", "seed"}
_OPTIONAL_KEYS = {"values", "minimum", "maximum"}


def _option_problems(entry: object, where: str) -> list[str]:
    if not isinstance(entry, dict):
        return [f"{where}: not an object"]
    keys = set(entry)
    problems = [f"{where}: missing {k!r}" for k in sorted(_OPTION_KEYS - keys)]
    problems += [
        f"{where}: unknown key {k!r}" for k in sorted(keys - _OPTION_KEYS - _OPTIONAL_KEYS)
    ]
    if problems:
        return problems
    places, kind = entry["places"], entry["kind"]
    if not isinstance(places, list) or not places or not set(places) <= set(PLACES):
        problems.append(f"{where}: places must be a non-empty subset of {', '.join(PLACES)}")
    if kind not in KINDS:
        problems.append(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    if entry["status"] not in STATUSES:
        problems.append(f"{where}: status {entry['status']!r} is not one of {', '.join(STATUSES)}")
    if entry["check"] not in ("", *CHECKS):
        problems.append(f"{where}: check {entry['check']!r} is not one of {', '.join(CHECKS)}")
    if entry["seed"] not in ("", "000", "001", "002"):
        problems.append(f"{where}: seed {entry['seed']!r} is not 000, 001, 002 or empty")
    if not isinstance(entry["summary"], str) or not entry["summary"].strip():
        problems.append(f"{where}: empty summary")
    if not isinstance(entry["requires"], list) or not all(
        isinstance(r, str) for r in entry["requires"]
    ):
        problems.append(f"{where}: requires must be a list of option names")
    values = entry.get("values", [])
    if not isinstance(values, list) or not values and "values" in entry:
        problems.append(f"{where}: values must be a non-empty list (omit it when free)")
    elif kind in KINDS and values:
        probe = NpuOption(entry["name"], frozenset(), kind, (), None, None, "", (), "", "", "")
        problems += [
            f"{where}: value {v!r}: {probe.value_problem(v)}"
            for v in values
            if probe.value_problem(v) is not None
        ]
    for bound in ("minimum", "maximum"):
        if bound in entry and (
            not isinstance(entry[bound], (int, float)) or isinstance(entry[bound], bool)
        ):
            problems.append(f"{where}: {bound} must be a number")
    return problems


def shape_problems(data: object) -> list[str]:
    """One line per way ``data`` (the parsed rules/tf_adapter.json) is not a valid table."""
    if not isinstance(data, dict):
        return ["the table is not a JSON object"]
    problems = [
        f"missing section {k!r}"
        for k in ("source", "options", "constructors", "api_support")
        if k not in data
    ]
    if problems:
        return problems
    options = data["options"]
    if not isinstance(options, list):
        return ["options: not a list"]
    names: set[str] = set()
    for index, entry in enumerate(options):
        name = entry.get("name") if isinstance(entry, dict) else None
        where = f"option {name!r}" if isinstance(name, str) else f"options[{index}]"
        problems += _option_problems(entry, where)
        if isinstance(name, str) and name in names:
            problems.append(f"{where}: listed twice")
        names.add(name if isinstance(name, str) else "")
    for entry in options:
        for required in entry.get("requires", []) if isinstance(entry, dict) else []:
            if required not in names:
                problems.append(f"option {entry.get('name')!r}: requires unknown {required!r}")
    constructors = data["constructors"]
    if not isinstance(constructors, dict) or set(constructors) != set(CONSTRUCTORS):
        problems.append(f"constructors: must have exactly {', '.join(CONSTRUCTORS)}")
    else:
        for cls, params in constructors.items():
            if not isinstance(params, list) or not all(isinstance(p, str) for p in params):
                problems.append(f"constructor {cls}: not a list of parameter names")
    support = data["api_support"]
    if not isinstance(support, dict):
        return [*problems, "api_support: not an object"]
    for version, apis in support.items():
        for api, row in apis.items() if isinstance(apis, dict) else [("", None)]:
            if (
                not api.startswith("tensorflow.")
                or not isinstance(row, dict)
                or (row.get("status") not in API_STATUSES or not row.get("tip"))
            ):
                problems.append(f"api_support {version} {api!r}: bad entry {row!r}")
    return problems


def loads(data: str | dict[str, Any]) -> TfAdapterTable:
    """The table from rules/tf_adapter.json's text (or its parsed object); ValueError naming
    the first bad entries."""
    raw: Any = json.loads(data) if isinstance(data, str) else data
    problems = shape_problems(raw)
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise ValueError("bad tf_adapter table: " + "; ".join(problems[:3]) + more)
    options = {
        e["name"]: NpuOption(
            name=e["name"],
            places=frozenset(e["places"]),
            kind=e["kind"],
            values=tuple(e.get("values", ())),
            minimum=e.get("minimum"),
            maximum=e.get("maximum"),
            check=e["check"],
            requires=tuple(e["requires"]),
            status=e["status"],
            summary=e["summary"],
            seed=e["seed"],
        )
        for e in raw["options"]
    }
    return TfAdapterTable(
        options=options,
        constructors={k: tuple(v) for k, v in raw["constructors"].items()},
        api_support={
            version: {api: (row["status"], row["tip"]) for api, row in apis.items()}
            for version, apis in raw["api_support"].items()
        },
        source=dict(raw["source"]),
    )
