"""-sim/--similar: APIs with no NPU implementation replaced by functionally similar ones
(rules similar.*; data: rules/similar_api.json, each entry with its caveat).

Nothing is replaced unless every use the engine would have to touch can be converted exactly:
a from-imported name is re-pointed (``from apex.normalization import FusedLayerNorm`` becomes
``from torch.nn import LayerNorm as FusedLayerNorm``) only when all its calls are convertible; a
FlashAttention import is removed (the line becomes ``pass``, so line numbers stay) only when every
use is a convertible call. Anything else stays as it was and stays in unsupported_op.xlsx.
"""

from __future__ import annotations

from typing import Any

import libcst as cst
from libcst.helpers import get_full_name_for_node, get_full_name_for_node_or_raise
from libcst.metadata import Scope, ScopeProvider

from ms_fmk_transplt.catalogue.rule_catalog import ANSWERS_LINE, declare
from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.events import Operation

# The entries of rules/similar_api.json name these ids; each entry carries its own caveat.
_OPTION = "-sim"
_CAVEAT = "a similar API, not the same one: read the change's message"
_ALL_OR_NOTHING = (
    " Nothing is replaced unless every use the engine would have to touch converts exactly; "
    "otherwise the code stays as it was and stays in unsupported_op.xlsx, with a WARNING saying "
    "why."
)
SIMILAR_RULES = (
    declare(
        "similar.layer_norm",
        "-sim: apex `FusedLayerNorm` / `FusedRMSNorm` -> `torch.nn.LayerNorm` / `RMSNorm`",
        "apex's fused normalisation layers need its CUDA kernels. The same normalisation "
        "(`normalized_shape`, `eps`, `elementwise_affine`) is available in torch; results can "
        "differ in the last bits. A from-imported name is re-pointed (`from torch.nn import "
        "LayerNorm as FusedLayerNorm`)." + _ALL_OR_NOTHING,
        caveat=_CAVEAT,
        option=_OPTION,
        answers=ANSWERS_LINE,
    ),
    declare(
        "similar.fused_optimizer",
        "-sim: apex `FusedAdam` / `FusedSGD` / `FusedAdagrad` -> `torch.optim` counterparts",
        "Same update rule, without apex's multi-tensor CUDA kernel: `FusedAdam` becomes "
        "`torch.optim.AdamW` (`adam_w_mode=False`: `Adam`); `bias_correction` and "
        "`master_weights` have no counterpart. For speed on the NPU see advice.fused_optimizer."
        + _ALL_OR_NOTHING,
        caveat=_CAVEAT,
        option=_OPTION,
        answers=ANSWERS_LINE,
    ),
    declare(
        "similar.flash_attention",
        "-sim: `flash_attn_func(q, k, v, ...)` -> `F.scaled_dot_product_attention`",
        "FlashAttention's kernels are CUDA-only. The call becomes SDPA with the tensors "
        "transposed to its (batch, heads, seq, dim) layout and back; dropout, softmax scale and "
        "causal masking carry over. The import is removed (the line becomes `pass`, so line "
        "numbers stay) only when every use is a convertible call. For speed see "
        "advice.sdpa_fusion_attention." + _ALL_OR_NOTHING,
        caveat=_CAVEAT,
        option=_OPTION,
        answers=ANSWERS_LINE,
    ),
    declare(
        "similar.nvtx",
        "-sim: NVTX marks -> no-ops, `nvtx.range` -> `record_function`",
        "NVTX ranges do not exist on the NPU: `range_push`, `range_pop` and `mark` become no-ops, "
        "and the `torch.cuda.nvtx.range` context manager becomes the PyTorch profiler's "
        "`record_function`, which torch_npu's profiler records." + _ALL_OR_NOTHING,
        caveat=_CAVEAT,
        option=_OPTION,
        answers=ANSWERS_LINE,
    ),
)

Entry = dict[str, Any]
_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def _expr(code: str) -> cst.BaseExpression:
    return cst.parse_expression(code)


class Similar(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        self.entries: dict[str, Entry] = self.tables.similar
        self.calls: dict[int, Entry] = {}  # id(original call or statement call) -> entry
        self.aliases: dict[int, Entry] = {}  # id(original ImportAlias) -> entry
        self.pass_lines: set[int] = set()  # id(original ImportFrom) that became `pass`

    # -- planning (before anything changes) --------------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        calls: dict[int, cst.Call] = {}
        statement_calls: set[int] = set()
        imports: list[cst.ImportFrom] = []

        class Collect(cst.CSTVisitor):
            def visit_Call(self, n: cst.Call) -> None:
                calls[id(n.func)] = n

            def visit_Expr(self, n: cst.Expr) -> None:
                if isinstance(n.value, cst.Call):
                    statement_calls.add(id(n.value))

            def visit_ImportFrom(self, n: cst.ImportFrom) -> None:
                imports.append(n)

        node.visit(Collect())
        self.statement_calls = statement_calls
        scope = self.ctx.metadata(ScopeProvider, node)
        for stmt in imports:
            if stmt.relative or stmt.module is None or isinstance(stmt.names, cst.ImportStar):
                continue
            module = get_full_name_for_node(stmt.module) or ""
            for alias in stmt.names:
                entry = self.entries.get(f"{module}.{get_full_name_for_node(alias.name)}")
                if entry is None or entry["kind"] == "noop":
                    continue
                name = alias.asname.name if alias.asname else alias.name
                bound = get_full_name_for_node_or_raise(name)
                self._plan_alias(scope, stmt, alias, bound, entry, calls)
        for call in calls.values():
            func = call.func
            if not isinstance(func, cst.Attribute) or self.ctx.is_claimed(func):
                continue
            entry = self.entries.get(self.ctx.qname(func) or "")
            if entry is not None and self._convertible(call, entry, attribute=True) is None:
                self.calls[id(call)] = entry
                self._claim_chain(func)

    def _plan_alias(
        self,
        scope: Scope,
        stmt: cst.ImportFrom,
        alias: cst.ImportAlias,
        bound: str,
        entry: Entry,
        calls: dict[int, cst.Call],
    ) -> None:
        assignments = [a for a in scope.assignments[bound] if getattr(a, "node", None) is stmt]
        if not assignments:
            return  # not a module-level import
        references = [access.node for a in assignments for access in a.references]
        planned: list[cst.Call] = []
        for ref in references:
            call = calls.get(id(ref))
            if call is None:
                if entry["kind"] == "class":
                    continue  # isinstance(m, FusedLayerNorm): the alias keeps it working
                return self._not_replaced(ref, entry, "used other than as a call")
            problem = self._convertible(call, entry, attribute=False)
            if problem:
                return self._not_replaced(call, entry, problem)
            planned.append(call)
        self.aliases[id(alias)] = entry
        self.ctx.claim(alias)
        for call in planned:
            self.calls[id(call)] = entry
            self._claim_chain(call.func)

    def _not_replaced(self, node: cst.CSTNode, entry: Entry, why: str) -> None:
        self.ctx.warn(
            self.ctx.lines(node), entry["rule"], f"-sim: {entry['api']} not replaced ({why})"
        )

    def _claim_chain(self, func: cst.BaseExpression) -> None:
        cur = func
        while True:
            self.ctx.claim(cur)
            if not isinstance(cur, cst.Attribute):
                break
            cur = cur.value

    def _convertible(self, call: cst.Call, entry: Entry, attribute: bool) -> str | None:
        """None when the call can be converted exactly, else the reason it cannot."""
        kind = entry["kind"]
        if any(a.star for a in call.args):
            return "*args/**kwargs"
        keywords = {a.keyword.value for a in call.args if a.keyword is not None}
        if kind == "noop":
            return None if id(call) in self.statement_calls else "its result is used"
        needs_root = attribute or kind == "flash_attn" or self._variant(call, entry) is not None
        root = entry["replacement"].split(".")[0]
        if needs_root and root not in self.ctx.module_bound:
            return f"`{root}` is not imported at module level"
        if kind == "class":
            bad = keywords & set(entry.get("unsupported_keywords", ()))
            return f"keyword {sorted(bad)[0]}= has no counterpart" if bad else None
        positional = [a for a in call.args if a.keyword is None]
        if len(positional) > len(entry["positional"]):
            return "too many positional arguments"
        unknown = keywords - set(entry["keywords"]) - {"q", "k", "v"}
        return f"keyword {sorted(unknown)[0]}= has no counterpart" if unknown else None

    def _variant(self, call: cst.Call, entry: Entry) -> str | None:
        variants: dict[str, str] = entry.get("variants", {})
        for condition, replacement in variants.items():
            key, value = condition.split("=")
            for a in call.args:
                if (
                    a.keyword is not None
                    and a.keyword.value == key
                    and (isinstance(a.value, cst.Name) and a.value.value == value)
                ):
                    return replacement
        return None

    # -- rewriting ----------------------------------------------------------------------------
    def _record(
        self,
        node: cst.CSTNode,
        entry: Entry,
        before: str,
        after: str,
        target: str,
        operation: Operation = Operation.MODIFY,
    ) -> None:
        self.ctx.record(
            self.ctx.lines(node),
            entry["rule"],
            f"similar: {entry['api']} -> {target} ({entry['caveat']})",
            before,
            after,
            operation=operation,
        )

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        entry = self.calls.get(id(original))
        if entry is None or entry["kind"] == "noop":
            return updated
        if entry["kind"] == "flash_attn":
            new = self._flash(entry, updated)
            target = entry["replacement"]
        else:
            drop = set(entry.get("drop_keywords", ()))
            args = [a for a in updated.args if not (a.keyword and a.keyword.value in drop)]
            if args and len(args) < len(updated.args):
                args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            variant = self._variant(original, entry)
            target = variant or entry["replacement"]
            func = updated.func
            if variant is not None or isinstance(original.func, cst.Attribute):
                func = _expr(target)
            new = updated.with_changes(func=func, args=args)
        if self.ctx.code(new) != self.ctx.code(updated):  # a use via the re-pointed alias: as is
            self._record(original, entry, self.ctx.snippet(updated), self.ctx.snippet(new), target)
        return new

    def _flash(self, entry: Entry, call: cst.Call) -> cst.Call:
        names = entry["positional"]
        values: dict[str, cst.BaseExpression] = {}
        for i, a in enumerate(call.args):
            values[a.keyword.value if a.keyword else names[i]] = a.value

        def transposed(v: cst.BaseExpression) -> cst.Call:
            if not isinstance(v, _ATOMS) or v.lpar:
                v = v.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            return cst.Call(
                func=cst.Attribute(value=v, attr=cst.Name("transpose")),
                args=[cst.Arg(cst.Integer("1"), comma=_comma()), cst.Arg(cst.Integer("2"))],
            )

        args = [cst.Arg(transposed(values[n]), comma=_comma()) for n in ("q", "k", "v")]
        for name, new_name in entry["keywords"].items():
            if name in values:
                args.append(
                    cst.Arg(
                        values[name],
                        keyword=cst.Name(new_name),
                        comma=_comma(),
                        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
                    )
                )
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        sdpa = cst.Call(func=_expr(entry["replacement"]), args=args)
        return cst.Call(
            func=cst.Attribute(value=sdpa, attr=cst.Name("transpose")),
            args=[cst.Arg(cst.Integer("1"), comma=_comma()), cst.Arg(cst.Integer("2"))],
        )

    def leave_Expr(self, original: cst.Expr, updated: cst.Expr) -> cst.BaseSmallStatement:
        entry = self.calls.get(id(original.value))
        if entry is None or entry["kind"] != "noop":
            return updated
        self._record(
            original, entry, self.ctx.snippet(updated), "pass", "no-op", operation=Operation.DELETE
        )
        return cst.Pass()

    def leave_ImportFrom(
        self, original: cst.ImportFrom, updated: cst.ImportFrom
    ) -> cst.ImportFrom | cst.Pass | cst.FlattenSentinel[cst.ImportFrom]:
        if isinstance(original.names, cst.ImportStar):
            return updated
        assert not isinstance(updated.names, cst.ImportStar)  # (as original's)
        planned = [(o, u) for o, u in zip(original.names, updated.names) if id(o) in self.aliases]
        if not planned:
            return updated
        keep = [u for o, u in zip(original.names, updated.names) if id(o) not in self.aliases]
        statements: list[cst.ImportFrom] = []
        by_parent: dict[str, list[cst.ImportAlias]] = {}
        removed = []
        for orig_alias, alias in planned:
            entry = self.aliases[id(orig_alias)]
            if entry["kind"] != "class":
                removed.append(entry)
                continue
            parent, leaf = entry["replacement"].rsplit(".", 1)
            bound = alias.asname.name if alias.asname else alias.name
            assert isinstance(bound, cst.Name)  # what a from-import binds
            asname = None if get_full_name_for_node(bound) == leaf else cst.AsName(name=bound)
            by_parent.setdefault(parent, []).append(
                cst.ImportAlias(name=cst.Name(leaf), asname=asname)
            )
        for parent, aliases in by_parent.items():
            statements.append(
                updated.with_changes(
                    module=_expr(parent), names=_commas(aliases), lpar=None, rpar=None
                )
            )
        if keep:
            statements.append(updated.with_changes(names=_commas(keep), lpar=None, rpar=None))
        before = self.ctx.snippet(original)
        entry = self.aliases[id(planned[0][0])]
        if not statements:
            self.pass_lines.add(id(original))
            self._record(
                original, entry, before, "pass", entry["replacement"], operation=Operation.DELETE
            )
            return cst.Pass()
        after = "; ".join(self.ctx.snippet(s) for s in statements)
        self._record(original, entry, before, after, entry.get("replacement", ""))
        return statements[0] if len(statements) == 1 else cst.FlattenSentinel(statements)

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        if not any(id(s) in self.pass_lines for s in original.body):
            return updated
        comment = cst.Comment(
            "# ms_fmk_transplt -sim: import replaced by "
            "torch.nn.functional.scaled_dot_product_attention"
        )
        return updated.with_changes(
            trailing_whitespace=cst.TrailingWhitespace(
                whitespace=cst.SimpleWhitespace("  "), comment=comment
            )
        )


def _comma() -> cst.Comma:
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def _commas(aliases: list[cst.ImportAlias]) -> list[cst.ImportAlias]:
    return [
        a.with_changes(comma=_comma() if i < len(aliases) - 1 else cst.MaybeSentinel.DEFAULT)
        for i, a in enumerate(aliases)
    ]
