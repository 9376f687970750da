"""CUDA/NCCL environment variable names -> their Ascend counterparts where they are used as
environment keys (rule environment.ascend_variable; data: the ``environment`` list of
rules/advice.json, entries marked ``exact``).

``os.environ["CUDA_VISIBLE_DEVICES"]``, ``os.getenv("PYTORCH_CUDA_ALLOC_CONF")``,
``"..." in os.environ``, ``os.environ.get/setdefault/pop(...)``, ``os.putenv``/``os.unsetenv``
and the keys of an ``env={...}`` argument (subprocess) are rewritten, only when the Ascend
variable has the same role and the same values (``CUDA_VISIBLE_DEVICES`` ->
``ASCEND_RT_VISIBLE_DEVICES``). The change carries a caveat (what differs is in the advice
table). Any other mention of such a name (a log message) is left alone; names set in a command
line (``"CUDA_VISIBLE_DEVICES=0 python ..."``) are rows of rule unsupported.environment. A file
whose only changes are such keys gets no ``import torch_npu``. Opt out with
``# msft: ignore[environment.ascend_variable]``.
"""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.environment_keys import ENVIRON, KEY_CALLS, RULE, message


class Environment(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        self.names = self.tables.advice.exact_environment
        self.keys: set[int] = set()

    def _mark(self, node: cst.BaseExpression) -> None:
        if isinstance(node, cst.SimpleString) and self.ctx.literal_body(node) in self.names:
            self.keys.add(id(node))
            self.ctx.claim(node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            if self.ctx.qname(node.value) == ENVIRON:
                self._mark(node.slice[0].slice.value)

    def visit_Comparison(self, node: cst.Comparison) -> None:  # "CUDA_..." in os.environ
        if len(node.comparisons) == 1:
            target = node.comparisons[0]
            if isinstance(target.operator, (cst.In, cst.NotIn)):
                if self.ctx.qname(target.comparator) == ENVIRON:
                    self._mark(node.left)

    def visit_Call(self, node: cst.Call) -> None:
        if node.args and node.args[0].keyword is None and node.args[0].star == "":
            if self.ctx.qname(node.func) in KEY_CALLS:
                self._mark(node.args[0].value)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and node.keyword.value == "env":
            if isinstance(node.value, cst.Dict):
                for element in node.value.elements:
                    if isinstance(element, cst.DictElement):
                        self._mark(element.key)

    def leave_SimpleString(
        self, original: cst.SimpleString, updated: cst.SimpleString
    ) -> cst.SimpleString:
        if id(original) not in self.keys:
            return updated
        body = self.ctx.literal_body(updated)
        assert body is not None  # a key was marked for its literal's (str) body
        entry = self.names[body]
        new = self.ctx.with_literal_body(updated, entry.ascend)
        text = message(body, entry.ascend, entry.caveat)
        self.ctx.record(original, RULE, text, updated.value, new.value, needs_torch_npu=False)
        return new
