"""Rule ids: each one is declared once, by ``declare(...)`` in the module whose code emits it.

The id a declaration returns is the string every record carries (change_list.csv, the reports, the
``# msft: ignore[<id>]`` comment, the fixture folder ``fixtures/rules/<id>/`` and the page
``docs/rules/<id>.md``, which scripts/build_rule_docs.py generates from the declarations).
This module is the bottom of the house: it imports nothing of the tool.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass

CHANGE = "change"  # rewrites code: a change_list.csv row
OPEN_WORK = "open work"  # leaves code as it is: an unsupported_op row (manual or caveat)
ADVICE = "advice"  # an advice.csv row: optional NPU performance / precision work
NOTICE = "notice"  # a line of the log (no report row)
KINDS = (CHANGE, OPEN_WORK, ADVICE, NOTICE)

IGNORE = (
    "`# msft: ignore[{id}]` at the end of the line keeps that line as written and drops its rows"
)
SKIP_FILE = "`# msft: skip-file` anywhere in the file leaves the whole file alone"

# Rule.fixed: why --select / --ignore do not act on a rule
INSERTED_LINES = "lines inserted for the file's other changes: they go when those changes go"
UNREAD_FILE = "the file is not migrated; `# msft: skip-file` leaves it out"
OWN_COMMENTS = "notes of your own `# msft:` comments: remove the comment instead"
# Rule.answers: a change of the rule makes moot the advice on its lines about ...
ANSWERS_LINE = "*"  # ... anything (the change replaced the code the advice is about)
ANSWERS_API = "api"  # ... the API the change renamed away on that line


@dataclass(frozen=True)
class Rule:
    id: str
    summary: str  # one line: what the rule does
    details: str  # what it does and why, in a few sentences (Markdown)
    kind: str = CHANGE
    caveat: str = ""  # non-empty: the rule's changes run but can behave differently (a caveat)
    opt_out: str = IGNORE  # how a user keeps code out of the rule ({id} is filled in)
    option: str = ""  # the command-line option that enables the rule ("" = always on)
    module: str = ""  # the module that declares (and emits) it
    bookkeeping: bool = False  # its changes are the tool's own lines, not CUDA items counted
    fixed: str = ""  # why --select / --ignore cannot turn it off ("": they can)
    answers: str = ""  # the advice its changes make moot on their lines (ANSWERS_*, an advice id)
    # its inserts are a change of their own (a kit's calls), not lines that follow from the
    # file's other changes (`import torch_npu`, -s's helper): kept where those are all kept out
    standalone: bool = False
    # its changes are an option's edits (-r, distributed -m) of code that need not be CUDA code:
    # listed in change_list.csv, counted as CUDA items only where the line they change is
    # CUDA-specific (report/statistics.py)
    option_edit: bool = False

    def opt_out_text(self) -> str:
        return self.opt_out.format(id=self.id)


RULES: dict[str, Rule] = {}


def declare(
    rule_id: str,
    summary: str,
    details: str,
    *,
    kind: str = CHANGE,
    caveat: str = "",
    opt_out: str = IGNORE,
    option: str = "",
    bookkeeping: bool = False,
    fixed: str = "",
    answers: str = "",
    standalone: bool = False,
    option_edit: bool = False,
) -> str:
    """Register a rule and return its id (the string the emitting code records); the keyword
    arguments from ``bookkeeping`` on say how the core treats its rows (see Rule)."""
    if kind not in KINDS:
        raise ValueError(f"{rule_id}: unknown rule kind {kind!r}")
    if "." not in rule_id or rule_id != rule_id.strip() or " " in rule_id:
        raise ValueError(f"{rule_id!r}: a rule id is '<family>.<name>'")
    module = sys._getframe(1).f_globals.get("__name__", "")
    rule = Rule(
        rule_id,
        summary,
        details,
        kind,
        caveat,
        opt_out,
        option,
        module,
        bookkeeping,
        fixed,
        answers,
        standalone,
        option_edit,
    )
    known = RULES.get(rule_id)
    if known is not None and known != rule:
        raise ValueError(f"rule {rule_id} is declared twice, differently")
    RULES[rule_id] = rule
    return rule_id


def rule_matches(rule_id: str, patterns: Iterable[str]) -> bool:
    """Whether a rule id is one of ``patterns``, each an id or an id prefix that ends at a dot:
    ``distributed`` matches ``distributed`` and ``distributed.nccl_backend``, never
    ``distributed_mode.ddp``. The one matcher of --select / --ignore, of the rule pages they
    name and of ``# msft: ignore[...]``."""
    return any(rule_id == p or rule_id.startswith(p + ".") for p in patterns)


def is_caveat(rule_id: str) -> bool:
    """Whether changes of this rule carry a caveat (looked up when the change is recorded)."""
    rule = RULES.get(rule_id)
    return bool(rule and rule.caveat)


def caveat_text(rule_id: str) -> str:
    """What to check about a change of this rule ("" when its changes carry no caveat)."""
    rule = RULES.get(rule_id)
    return rule.caveat if rule else ""


def rules_with(role: str) -> dict[str, str]:
    """The declared rules whose ``role`` (``fixed`` or ``answers``) is set: id -> its value."""
    return {i: getattr(r, role) for i, r in RULES.items() if getattr(r, role)}


def answered_advice(rule_id: str) -> str:
    """The advice a change of this rule makes moot on its lines (Rule.answers; "": none)."""
    rule = RULES.get(rule_id)
    return rule.answers if rule else ""


def stands_alone(rule_id: str) -> bool:
    """Whether the rule's inserts are a change of their own (Rule.standalone: a kit's calls)."""
    rule = RULES.get(rule_id)
    return bool(rule and rule.standalone)


def is_option_edit(rule_id: str) -> bool:
    """Whether a change of this rule is an option's edit, a CUDA item only on a CUDA-specific
    line (Rule.option_edit)."""
    rule = RULES.get(rule_id)
    return bool(rule and rule.option_edit)


def is_bookkeeping(rule_id: str) -> bool:
    """Whether a change of this rule is the tool's own line (an added import, a kit's call, a
    TODO comment), not a CUDA construct of the user's code."""
    rule = RULES.get(rule_id)
    return bool(rule and rule.bookkeeping)
