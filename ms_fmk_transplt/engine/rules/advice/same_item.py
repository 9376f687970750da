"""An advice row about the construct an open-work row already names is one item, not two.

``torch.backends.cudnn.benchmark = True`` is a caveat row (unsupported.backend_switch: a no-op on
the NPU) and was also an advice row (advice.aoe_tuning: tune with AOE instead): the reviewer saw
the same line twice, and the counts had it once as a caveat and once as advice. The advice now
joins the row of the same file, line and API (its tip follows the row's, naming the advice's rule
so its page can be found); the advice row is dropped, so the Advice sheet, advice.csv, report.html
and every count see one item."""

from __future__ import annotations

import dataclasses
import re

from ms_fmk_transplt.engine.rules.family_spec import Folding
from ms_fmk_transplt.events import Notice

_JOINED = re.compile(r"; advice \(([a-z0-9_.]+)\): ")


def joined_advice(notice: Notice) -> list[str]:
    """The rules of the advice that are part of ``notice`` (an open-work row)."""
    return _JOINED.findall(notice.tip)


def fold_advice_into_rows(notices: list[Notice]) -> list[Notice]:
    """``notices`` with each advice notice on the line and API of an open-work row of the same
    file appended to that row's tip (in order) and removed."""
    rows = {(n.line, n.api): i for i, n in enumerate(notices) if n.open_work and n.api}
    if not rows:
        return notices
    joined: dict[int, list[Notice]] = {}
    for n in notices:
        at = rows.get((n.line, n.api)) if n.advice else None
        if at is not None:
            joined.setdefault(at, []).append(n)
    if not joined:
        return notices
    out = []
    for i, n in enumerate(notices):
        if n.advice and rows.get((n.line, n.api)) is not None:
            continue
        if i in joined:
            extra = "".join(f"; advice ({a.rule}): {a.tip}" for a in joined[i])
            n = dataclasses.replace(n, tip=f"{n.tip.rstrip()}{extra}")
        out.append(n)
    return out


def fold(notices: list[Notice], done: Folding) -> list[Notice]:
    """The family's rows folded (Family.fold): advice about an item an open-work row already
    names goes into that row."""
    return fold_advice_into_rows(notices)
