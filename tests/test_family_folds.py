"""What a family's fold reads (Family.fold): the file's open work and its own rows, nothing
else. registry.fold_rows relies on it to ask a family only when a file's rows hold either, so
that the advice rows of a file no pass walked import no other family (issue 50). Each fold is
given every kind of row it must leave as it is: the advice and notes of every other family's
rules, the same API on the same lines many times over (what a fold groups), a library's API."""

from __future__ import annotations

import dataclasses

import pytest

from ms_fmk_transplt.catalogue.rule_catalog import ADVICE as ADVICE_KIND
from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, RULES
from ms_fmk_transplt.engine import DEFAULT_OPTIONS
from ms_fmk_transplt.engine.rules import registry
from ms_fmk_transplt.engine.rules.family_spec import Folding
from ms_fmk_transplt.events import ADVICE, Notice, Severity
from ms_fmk_transplt.tables import load_tables

SOURCE = (
    b"import torch\nimport transformers\n\nx = torch.cuda.current_device()\n"
    b"y = transformers.Trainer()\nz = torch.nn.functional.interpolate(x, mode='bicubic')\n"
)
APIS = ("torch.cuda.current_device", "transformers.Trainer", "torch.nn.functional.interpolate")


def _rows(rule_ids: list[str]) -> list[Notice]:
    """Rows that are not open work, as the rules make them: advice (a category, the advice
    action) of the advice rules, notes (no category) of the others but those declared open
    work (whose rows all are: the deps family's, for one); three of each rule, API and line (a
    group to fold if a fold took them)."""
    rows: list[Notice] = []
    for rule in rule_ids:
        kind = RULES[rule].kind
        for line, api in enumerate(APIS, start=4):
            for _ in range(3):
                row = Notice("train.py", line, rule, Severity.INFO, f"{rule} says", api=api)
                if kind == ADVICE_KIND:
                    row = dataclasses.replace(row, category="performance", action=ADVICE, tip="t")
                if kind != OPEN_WORK:
                    rows.append(row)
    assert not any(row.open_work for row in rows)
    return rows


def _folding(migrated: bool) -> Folding:
    return Folding(SOURCE, load_tables(), DEFAULT_OPTIONS, migrated)


FOLDING = [f for f in registry.families() if f.fold is not None]


@pytest.mark.parametrize("family", FOLDING, ids=[f.name for f in FOLDING])
@pytest.mark.parametrize("migrated", [True, False])
def test_a_fold_leaves_the_rows_of_other_families_that_are_not_open_work(
    family: registry.Family, migrated: bool
) -> None:
    registry.declare_all()
    others = sorted(r for r in RULES if r.split(".")[0] != family.name)
    rows = _rows(others)
    assert family.fold is not None
    assert family.fold(list(rows), _folding(migrated)) == rows


def test_the_folds_are_the_families_that_fold_and_they_fold_open_work() -> None:
    """The test above is not empty: the families with a fold are many, and their folds do act
    on open work (the same unsupported API three times on one line: one row)."""
    assert {"advice", "device_api", "libraries", "operator_support", "unsupported"} <= {
        f.name for f in FOLDING
    }
    assert len(_rows(sorted(RULES))) > 300
    rows = [
        Notice(
            "train.py",
            line,
            "operator_support.restricted",
            Severity.WARNING,
            "restricted",
            api=APIS[2],
            category="operator_support",
            action="caveat",
            tip="bicubic",
        )
        for line in (4, 5, 6)
    ]
    assert all(row.open_work for row in rows)
    folded = registry.fold_rows(rows, _folding(migrated=False))
    assert len(folded) == 1 and folded[0].message.startswith("3 uses in this file (lines 4, 5, 6)")


def test_fold_rows_asks_no_family_for_rows_it_does_not_fold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Advice rows of one family only: no other family is asked (nor imported, in a process
    that has not loaded it), and the rows are what folding them by every family gives; one
    open-work row, and every family is asked again."""
    asked: list[str] = []
    family_of = registry._family

    def recorded(name: str) -> registry.Family:
        asked.append(name)
        return family_of(name)

    monkeypatch.setattr(registry, "_family", recorded)
    rows = _rows(["advice.fused_optimizer"])
    done = _folding(migrated=False)
    every = list(rows)
    for family in FOLDING:
        if family.name in registry._gated() or family.name not in registry.GATES:
            assert family.fold is not None
            every = family.fold(every, done)
    assert registry.fold_rows(list(rows), done) == every
    assert asked == ["advice"]
    asked.clear()
    work = dataclasses.replace(rows[0], category="environment", action="manual")
    registry.fold_rows([*rows, work], done)
    assert asked == [n for n in registry.NAMES if n not in registry.GATES or n in registry._gated()]
