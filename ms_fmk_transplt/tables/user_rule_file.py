"""Loading and validating user rules (-r/--rule rules.json) against rules/user_rules.schema.json.

Every problem is reported as one line naming the file, the JSON path and the problem (exit 2,
nothing written). Nothing in the file can crash the tool or break the files a rule matches: the
JSON is read only when it nests at most MAX_DEPTH levels and with its integers bounded; names
must be Python names (each part of a dotted one an identifier, not a keyword); an ``arg_new``
must be a one-line Python expression of at most MAX_EXPRESSION characters and
MAX_EXPRESSION_NESTING bracket levels (a few thousand nested parentheses crash LibCST's parser).
"""

from __future__ import annotations

import ast
import json
import keyword
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ms_fmk_transplt.errors import UserError
from ms_fmk_transplt.tables import rules_dir

if TYPE_CHECKING:
    import jsonschema  # imported when a rule file is given (see _validator)

KINDS = ("ArgsModifyRule", "FuncNameModifyRule", "ModuleNameModifyRule")
MAX_BYTES = 10 * 1024 * 1024
MAX_DEPTH = 32  # JSON nesting (a rule file nests 4 levels)
MAX_DIGITS = 100  # a longer integer is not read (Python refuses 4,300 digits and more)
MAX_EXPRESSION = 1000  # characters of an arg_new
MAX_EXPRESSION_NESTING = 50  # bracket levels of an arg_new
NAME_FIELDS = {
    "ArgsModifyRule": ("func_name", "arg_name"),
    "FuncNameModifyRule": ("old_name", "new_name"),
    "ModuleNameModifyRule": ("old_name", "new_name", "parent_module"),
}


@dataclass(frozen=True)
class ArgsModify:
    label: str  # its kind and position in the rules file: "ArgsModifyRule[0]"
    func_name: str
    arg_idx: int | None
    arg_name: str | None
    arg_new: str | None  # None: delete the argument


@dataclass(frozen=True)
class FuncNameModify:
    label: str  # its kind and position in the rules file: "ArgsModifyRule[0]"
    old_name: str
    new_name: str


@dataclass(frozen=True)
class ModuleNameModify:
    label: str  # its kind and position in the rules file: "ArgsModifyRule[0]"
    old: str  # parent_module.old_name
    new: str  # parent_module.new_name
    old_name: str
    new_name: str
    parent: str


@dataclass(frozen=True, eq=False)
class UserRules:
    path: str
    args: tuple[ArgsModify, ...]
    funcs: tuple[FuncNameModify, ...]
    modules: tuple[ModuleNameModify, ...]

    def names(self) -> set[str]:
        """Last name components the rules act on (for the byte pre-filter)."""
        return {names[-1] for names in self.spelled_names()}

    def spelled_names(self) -> set[tuple[str, ...]]:
        """Per rule, the names a file must spell for the rule to match in it: every part of its
        dotted name (names are resolved through the imports and attribute chains a file spells
        out: ``torch.optim.Adam`` needs torch, optim and Adam somewhere in the file)."""
        dotted = [r.func_name for r in self.args] + [r.old_name for r in self.funcs]
        out = {tuple(part for part in name.split(".") if part) for name in dotted}
        return out | {(r.old_name,) for r in self.modules}


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    import jsonschema  # only when a rule file is given

    schema = json.loads((rules_dir() / "user_rules.schema.json").read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    # JSON Schema counts 1.0 as an integer; an argument position must be an int (not a bool)
    strict = cls.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool)
    )
    strict_cls = cast(
        "type[jsonschema.protocols.Validator]",
        jsonschema.validators.extend(cls, type_checker=strict),  # type: ignore[no-untyped-call]
    )
    return strict_cls(schema)


def _json_path(path: Any) -> str:
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _message(error: Any) -> tuple[str, str]:  # a jsonschema.ValidationError
    """(JSON path, problem) in the user's terms."""
    where = _json_path(error.absolute_path)
    if isinstance(error.instance, _LongInteger):  # whatever the field expected
        return where, f"a number of {error.instance.digits} digits, far too large"
    v = error.validator
    if v == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        if where == "$.rules":
            return f"{where}.{extra[0]}", f"unknown rule kind (expected one of {', '.join(KINDS)})"
        return f"{where}.{extra[0]}", "unknown field"
    if v == "minItems":
        return where, "empty rule list"
    if v == "minProperties":
        return where, "no rules"
    if v == "required":
        missing = error.message.split("'")[1]
        return where, f"missing field '{missing}'"
    if v == "type":
        return where, f"must be {error.validator_value}, got {json.dumps(error.instance)}"
    if v == "pattern":
        return where, f"{json.dumps(error.instance)} is not a (dotted) Python name"
    if v == "minimum":
        return where, f"must be >= {error.validator_value}"
    if v == "maximum":
        return where, f"must be <= {error.validator_value}, got {json.dumps(error.instance)}"
    if v == "maxLength":
        return where, f"longer than {error.validator_value} characters"
    if v == "anyOf" and where.startswith("$.rules.ArgsModifyRule"):
        return where, "needs 'arg_idx' (position) or 'arg_name' (keyword)"
    if v == "oneOf" and where.startswith("$.rules.ArgsModifyRule"):
        return where, "needs exactly one of 'arg_new' (new value) or 'delete': true"
    if v == "const":
        return where, "must be true"
    return where, error.message


class _LongInteger:
    """An integer of more than MAX_DIGITS digits in the file (not converted: no field takes it)."""

    def __init__(self, text: str) -> None:
        self.digits = len(text.lstrip("-"))


def _bounded_int(text: str) -> int | _LongInteger:
    return _LongInteger(text) if len(text) > MAX_DIGITS else int(text)


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^()\[\]{}]+")
_INNERMOST = re.compile(r"\(\)|\[\]|\{\}")


def nested_deeper(text: str, limit: int) -> bool:
    """Whether the brackets of ``text`` (outside double-quoted strings) nest deeper than
    ``limit``: each round removes the innermost pairs (regular expressions: no recursion)."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    for _ in range(limit):
        brackets, removed = _INNERMOST.subn("", brackets)
        if not removed:
            return False
    return _INNERMOST.search(brackets) is not None


def load_user_rules(path_str: str) -> UserRules:
    path = Path(path_str)
    if not path.is_file():
        raise UserError(
            path_str, "rule file does not exist" if not path.exists() else "rule file is not a file"
        )
    if path.stat().st_size > MAX_BYTES:
        raise UserError(path_str, f"rule file is larger than {MAX_BYTES // 2**20} MiB")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(path_str, f"cannot read the rule file ({exc})") from exc
    if nested_deeper(text, MAX_DEPTH):
        raise UserError(path_str, f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        data = json.loads(text, parse_int=_bounded_int)
    except json.JSONDecodeError as exc:
        raise UserError(
            path_str, f"line {exc.lineno} column {exc.colno}: invalid JSON ({exc.msg})"
        ) from exc
    import jsonschema

    errors = sorted(
        _validator().iter_errors(data), key=lambda e: (list(e.absolute_path), e.validator)
    )
    if errors:
        error = jsonschema.exceptions.best_match(errors)
        where, problem = _message(error)
        raise UserError(path_str, f"{where}: {problem}")
    rules = data["rules"]
    _check_names(path_str, rules)
    args = []
    for i, r in enumerate(rules.get("ArgsModifyRule", [])):
        if "arg_new" in r:
            _check_expression(path_str, f"$.rules.ArgsModifyRule[{i}].arg_new", r["arg_new"])
        args.append(
            ArgsModify(
                f"ArgsModifyRule[{i}]",
                r["func_name"],
                r.get("arg_idx"),
                r.get("arg_name"),
                r.get("arg_new"),
            )
        )
    funcs = tuple(
        FuncNameModify(f"FuncNameModifyRule[{i}]", r["old_name"], r["new_name"])
        for i, r in enumerate(rules.get("FuncNameModifyRule", []))
    )
    modules = tuple(
        ModuleNameModify(
            f"ModuleNameModifyRule[{i}]",
            f"{r['parent_module']}.{r['old_name']}",
            f"{r['parent_module']}.{r['new_name']}",
            r["old_name"],
            r["new_name"],
            r["parent_module"],
        )
        for i, r in enumerate(rules.get("ModuleNameModifyRule", []))
    )
    return UserRules(str(path), tuple(args), funcs, modules)


def _check_names(path: str, rules: dict[str, list[dict[str, Any]]]) -> None:
    """Each name field is a (dotted) Python name: identifiers, no keyword, nothing around."""
    for kind, fields in NAME_FIELDS.items():
        for i, rule in enumerate(rules.get(kind, [])):
            for field in fields:
                if field not in rule:
                    continue
                value: str = rule[field]
                dotted = value[1:] if field == "func_name" and value.startswith(".") else value
                for part in dotted.split(".") if field != "arg_name" else [dotted]:
                    problem = _name_problem(part)
                    if problem:
                        raise UserError(
                            path,
                            f"$.rules.{kind}[{i}].{field}: {json.dumps(value)} is not a "
                            f"(dotted) Python name{problem}",
                        )


def _name_problem(part: str) -> str:
    """What makes ``part`` unfit to stand for a name in code (" (...)"), or "" if nothing."""
    if not part.isidentifier():
        return f" ({json.dumps(part)} is not an identifier)"
    if keyword.iskeyword(part):
        return f" ({json.dumps(part)} is a keyword)"
    return ""


def _check_expression(path: str, where: str, code: str) -> None:
    if "\n" in code or "\r" in code:
        raise UserError(path, f"{where}: must be a single-line Python expression")
    if len(code) > MAX_EXPRESSION:
        raise UserError(path, f"{where}: longer than {MAX_EXPRESSION} characters")
    if nested_deeper(code, MAX_EXPRESSION_NESTING):
        raise UserError(
            path, f"{where}: brackets nested deeper than {MAX_EXPRESSION_NESTING} levels"
        )
    try:  # CPython's parser first: it refuses what could crash LibCST's
        tree = ast.parse(code, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise UserError(path, f"{where}: {json.dumps(code)} is not a Python expression") from exc
    import libcst as cst  # only with -r, whose LibCST stage imports it anyway

    from ms_fmk_transplt.safety.tree_depth import MAX_DEPTH, TooDeep, check_tree

    try:  # LibCST's native parser crashes on deeply nested input (the tree above, measured)
        check_tree(tree, code.encode())
    except TooDeep as exc:
        raise UserError(
            path, f"{where}: expression nested more than {MAX_DEPTH} levels deep"
        ) from exc
    try:
        cst.parse_expression(code)
    except cst.ParserSyntaxError as exc:
        raise UserError(path, f"{where}: {json.dumps(code)} is not a Python expression") from exc
