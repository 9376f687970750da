"""Mixed precision: ``torch.autocast("cuda")``, ``torch.autocast(device_type="cuda")``,
``torch.amp.GradScaler("cuda")`` (rule amp.device_type). ``torch.cuda.amp.*`` is migrated by the
namespace table (rule amp.cuda_amp, see device_api.py / imports.py).

This concern only claims the device-type literals of the AMP entry points, so that the change list
names the AMP rule; device_strings.py performs the rewrite.
"""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.spans.amp_spans import DEVICE_TYPE


class Amp(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        self.table = self.tables.amp

    def visit_Call(self, node: cst.Call) -> None:
        names = self.ctx.names_in(node.func)
        if not names or names[0] not in self.table.leaves:
            return
        if (self.ctx.qname(node.func) or "") not in self.table.calls:
            return
        for i, arg in enumerate(node.args):
            is_device = (arg.keyword is None and i == 0 and not arg.star) or (
                arg.keyword is not None and arg.keyword.value in self.table.keywords
            )
            if is_device and isinstance(arg.value, (cst.SimpleString, cst.FormattedString)):
                self.ctx.claim(arg.value, rule=DEVICE_TYPE)
