"""The rule pages ``docs/rules/<id>.md``, generated from the declarations (rule_catalog.py) and the
golden fixture pairs ``fixtures/rules/<id>/``: scripts/build_rule_docs.py writes them, and
tests/test_rule_catalog.py fails when they are stale. Imports every module of every rule family
(engine/rules/registry.py; so LibCST too): used when building docs and in tests, never during
a migration.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
from pathlib import Path
from typing import Any
from unittest import mock

from ms_fmk_transplt.catalogue.rule_catalog import ADVICE, CHANGE, NOTICE, OPEN_WORK, RULES, Rule
from ms_fmk_transplt.engine import EngineOptions, migrate_source
from ms_fmk_transplt.engine.program_facts import MODULE_LEVEL, Program, ProgramFacts
from ms_fmk_transplt.engine.project_facts import ProjectFacts
from ms_fmk_transplt.engine.rules.family_exports import joined_advice
from ms_fmk_transplt.engine.rules.registry import family_modules
from ms_fmk_transplt.events import FileResult, Notice, Operation
from ms_fmk_transplt.run import file_migration
from ms_fmk_transplt.safe_names import shown
from ms_fmk_transplt.scan.assess_results import read_assessed
from ms_fmk_transplt.tables import Tables, load_tables
from ms_fmk_transplt.tables.user_rule_file import load_user_rules

KIND_TEXT = {
    CHANGE: "change: rewrites code, one change_list.csv row per change",
    OPEN_WORK: "open work: code left as it is, one row of unsupported_op.xlsx / .csv",
    ADVICE: "advice: optional NPU performance / precision work, one row of advice.csv",
    NOTICE: "notice: a line of msFmkTranspltlog.txt (no report row)",
}
EXAMPLE_ROWS = 3  # changes or rows shown in a page's example


def all_rules() -> dict[str, Rule]:
    """Every declared rule, by id (sorted): the modules of every family declare them."""
    for name in family_modules():
        importlib.import_module(name)
    return dict(sorted(RULES.items()))


def fixture_cases(fixtures: Path, rule_id: str) -> list[Path]:
    folder = fixtures / rule_id
    return sorted(p for p in folder.glob("*.py") if not p.name.endswith(".expected.py"))


# The optional sidecar of a fixture case, ``<case>.options.json``: the options it runs with, the
# fault it injects, and what it expects (every case states it there; the runner has no cases of
# its own).
OPTION_KEYS = {
    "rules",
    "specify_device",
    "similar",
    "distributed",
    "rank_guards",
    "target_version",
    "kit",
    "kit_only",  # true: the kit's calls alone, in the file as written (kit assess, the GPU side)
    "tf_program",  # {"style": ..., "found_by": ...}: what a program model says of the case
    "npu_options",  # {name: value}: --npu-option, typed as the command line's are
    "deps",  # a folder beside the case (a fake site-packages the case imports): --deps on it
    "assessed",  # an ops.csv beside the case (what kit assess recorded): --assessed on it
}
EXPECT = {
    "fires": "the rule of the folder fires (the default)",
    "unchanged": "nothing fires and the file is unchanged",
    "silent": "the rule of the folder does not fire",
}
SIDECAR_KEYS = OPTION_KEYS | {
    "fault",  # the engine raises this message (engine.internal_error; see run_case)
    "expect",  # one of EXPECT
    "parsed",  # false: input the engine does not parse (the parse.* rules), left out of the
    # tests that need a Python program (properties, LibCST names)
    "python",  # "X.Y": the case shows what Python X.Y's own parser says (syntax of a newer
    # Python, CPython's words): left out on another Python (fixture_applies)
}


def fixture_sidecar(case: Path) -> dict[str, Any]:
    """The sidecar of a fixture case ({} without one), checked: a typo fails loudly."""
    sidecar = case.with_name(case.stem + ".options.json")
    if not sidecar.exists():
        return {}
    data: dict[str, Any] = json.loads(sidecar.read_text(encoding="utf-8"))
    unknown = sorted(set(data) - SIDECAR_KEYS)
    if unknown or data.get("expect", "fires") not in EXPECT:
        raise ValueError(f"{sidecar}: unknown keys {unknown} or expect {data.get('expect')!r}")
    return data


def fixture_expect(case: Path) -> str:
    """What the case expects of the rule of its folder: a key of EXPECT."""
    return str(fixture_sidecar(case).get("expect", "fires"))


def fixture_applies(case: Path) -> bool:
    """Whether the case holds on the Python running (its sidecar's ``python``)."""
    python = fixture_sidecar(case).get("python")
    return python is None or python == f"{sys.version_info[0]}.{sys.version_info[1]}"


def fixture_parsed(case: Path) -> bool:
    return bool(fixture_sidecar(case).get("parsed", True))


def fixture_options(case: Path, root: Path) -> tuple[EngineOptions | None, str]:
    """Engine options of a fixture case from its sidecar (None: the defaults), and the fault it
    injects ("" for none; see ``run_case``)."""
    data = fixture_sidecar(case)
    if not OPTION_KEYS & set(data):
        return None, data.get("fault", "")
    rules = load_user_rules(str(root / data["rules"])) if "rules" in data else None
    options = EngineOptions(
        user_rules=rules,
        specify_device=data.get("specify_device", False),
        similar=data.get("similar", False),
        distributed_target=data.get("distributed"),
        rank_guards=data.get("rank_guards", True),
        kit=data.get("kit", ""),
        kit_only=data.get("kit_only", False),
        project=_tf_program(case.name, data["tf_program"]) if "tf_program" in data else None,
        npu_options=tuple(data.get("npu_options", {}).items()),
    )
    if "deps" in data:
        options = dataclasses.replace(options, project=_deps(case, data["deps"], options.project))
    if "assessed" in data:
        facts, _ = read_assessed(str(case.parent / data["assessed"]), case.parent)
        project = dataclasses.replace(options.project or ProjectFacts(), assessed=facts)
        options = dataclasses.replace(options, project=project)
    return options, data.get("fault", "")


def _deps(case: Path, folder: str, facts: ProjectFacts | None) -> ProjectFacts:
    """The facts of a run of the case alone with ``--deps`` on ``folder`` (relative to the
    case's folder), as run/library_analysis.py computes them (no cache)."""
    from ms_fmk_transplt.run.library_analysis import analyse_dependencies

    tables = docs_tables(fixture_version(case))
    files = [(case.name, case.read_bytes())]
    folders = (str(case.parent / folder),)
    deps, _ = analyse_dependencies(folders, files, frozenset(), tables, None, 1)
    return dataclasses.replace(facts or ProjectFacts(), deps=deps)


def _tf_program(name: str, program: dict[str, str]) -> ProjectFacts:
    """The facts of a run whose program model makes the case the entry of a TF 2.x program
    (found as ``found_by`` says) in the TensorFlow ``style`` given (tf2_compat: compat.v1
    graph code), as program_model.build_programs would for a project around it."""
    style, found_by = program["style"], program["found_by"]
    entry = Program(name, found_by, "tensorflow", "2", "fixture sidecar", 1)
    compat = style == "tf2_compat" and not found_by.startswith(MODULE_LEVEL)
    facts = ProgramFacts(
        (entry,),
        {name: (style, "fixture sidecar")},
        frozenset([name] if style == "tf2" else []),
        compat_entries=frozenset([name] if compat else []),
    )
    return ProjectFacts(programs=facts)


def fixture_version(case: Path) -> str:
    """The torch_npu version a fixture case targets ("": the newest), from its sidecar."""
    return str(fixture_sidecar(case).get("target_version", ""))


def docs_tables(version: str = "") -> Tables:
    """The tables of a fixture case's target version (the newest by default). Building the
    docs is not a run: this module loads its own, as a run's entry point does."""
    return load_tables(version)


def run_case(case: Path, root: Path, source: Path | None = None) -> FileResult:
    """Migrate a fixture case (or ``source`` with the case's options) as the tool would. A case
    whose sidecar names a ``fault`` runs through the pipeline with the engine raising that
    message (the engine.internal_error path)."""
    options, fault = fixture_options(case, root)
    source = source or case
    tables = docs_tables(fixture_version(case))
    if not fault:
        return migrate_source(source.read_bytes(), case.name, tables, options)
    with mock.patch.object(file_migration, "migrate_source", side_effect=RuntimeError(fault)):
        data, record = file_migration.migrate_file(source, case.name, tables, options)
    return FileResult(case.name, record.status, data, record.events, record.notices)


def render_page(rule: Rule, root: Path) -> str:
    fixtures = root / "fixtures" / "rules"
    cases = fixture_cases(fixtures, rule.id)
    module = rule.module.replace(".", "/") + ".py"
    facts = [
        ("Kind", KIND_TEXT[rule.kind]),
        ("Enabled", f"with `{rule.option}`" if rule.option else "always"),
        ("Caveat", rule.caveat or "none"),
        ("Opt out", rule.opt_out_text()),
        ("Declared in", f"`{module}`"),
        ("Fixtures", f"`fixtures/rules/{rule.id}/` ({len(cases)} case{'s' * (len(cases) != 1)})"),
    ]
    out = [f"# {rule.id}", "", rule.summary, "", "| | |", "| --- | --- |"]
    out += [f"| {name} | {_cell(value)} |" for name, value in facts]
    out += ["", "## What it does and why", "", rule.details, ""]
    out += _advice_section(rule.id)
    if cases:
        out += _example(rule, cases, root)
    out += [
        "---",
        f"Generated from the declaration of `{rule.id}` and its fixtures by "
        "scripts/build_rule_docs.py; `ms_fmk_transplt rule <id>` prints this page.",
        "",
    ]
    return "\n".join(out)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _advice_section(rule_id: str) -> list[str]:
    entry = docs_tables().advice.by_id.get(rule_id)
    if entry is None:
        return []
    pattern = [f"code pattern `{entry.pattern}`"] if entry.pattern else []
    triggers = sorted(entry.apis) + pattern
    shown = ", ".join(f"`{t}`" if not t.startswith("code") else t for t in triggers[:8])
    more = f" and {len(triggers) - 8} more" if len(triggers) > 8 else ""
    out = ["## The advice (rules/advice.json)", "", f"**Kind:** {entry.kind}", ""]
    out += [f"**Triggered by:** {shown}{more}", "", f"**What to do:** {entry.advice}", ""]
    if entry.effect:
        out += [f"**Expected effect:** {entry.effect}", ""]
    out += [f"**Documented in:** {entry.documented}", ""]
    return out


def _example(rule: Rule, cases: list[Path], root: Path) -> list[str]:
    for case in filter(fixture_applies, cases):
        result = run_case(case, root)
        # shown: a fixture's bidi controls (parse.bidi_control) are printed as escapes, so the
        # page itself cannot read differently from what it shows
        source = [shown(x) for x in case.read_text("utf-8", errors="replace").splitlines()]
        output = [shown(x) for x in result.output.decode("utf-8", errors="replace").splitlines()]
        events = [e for e in result.events if e.rule == rule.id][:EXAMPLE_ROWS]
        notices = [  # with the rows an advice is part of
            n for n in result.notices if n.rule == rule.id or rule.id in joined_advice(n)
        ]
        notices = notices[:EXAMPLE_ROWS]
        if not events and not notices:
            continue
        name = f"fixtures/rules/{rule.id}/{case.name}"
        out = ["## Example", "", f"From the golden pair `{name}` (input -> migrated):", ""]
        out += ["```diff"]
        for e in events:
            if e.operation != Operation.INSERT:
                out += [f"-{line}" for line in source[e.start_line - 1 : e.end_line]]
            out += [f"+{line}" for line in output[e.out_start_line - 1 : e.out_end_line]]
        for n in notices:
            start, end = n.lines(migrated=False)
            out += [f" {line}" for line in source[start - 1 : end]]
        out += ["```", ""]
        if notices:
            out += _rows(notices)
        return out
    return []


def _rows(notices: list[Notice]) -> list[str]:
    out = ["| Line | API | Category | Action | Tip |", "| --- | --- | --- | --- | --- |"]
    for n in notices:
        tip = n.tip or n.message.splitlines()[0]
        out.append(
            f"| {n.line} | {_cell(n.api) or '-'} | {n.category or '-'} | {n.action or '-'} "
            f"| {_cell(tip)} |"
        )
    return [*out, ""]


def index_page(rules: dict[str, Rule]) -> str:
    out = [
        "# Rules",
        "",
        "Every rule id the tool records, with its page. The id is the same string in "
        "change_list.csv, unsupported_op.xlsx, advice.csv, the log, `--check`, the HTML report, "
        "`# msft: ignore[<id>]` and `fixtures/rules/<id>/`. Generated by "
        "scripts/build_rule_docs.py.",
        "",
        "| Rule | Kind | Summary |",
        "| --- | --- | --- |",
    ]
    for rule in rules.values():
        kind = rule.kind + (f" ({rule.option})" if rule.option else "")
        out.append(f"| [`{rule.id}`]({rule.id}.md) | {kind} | {_cell(rule.summary)} |")
    return "\n".join([*out, ""])
