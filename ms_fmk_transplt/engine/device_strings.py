"""Device specs: ``"cuda:0"``, ``f"cuda:{rank}"``, ``"cuda:" + str(i)`` -> npu, and integer device
indices (``torch.device(rank)``, ``x.to(local_rank)``, ``device=local_rank``) -> ``npu:<i>``
(rules device_strings.literal, device_strings.fstring, device_strings.int_device).

Only literals whose *whole* value is a device spec change; prose that mentions cuda, comments and
docstrings never do.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from ms_fmk_transplt.engine.base import (
    Concern,
    fstring_texts,
    literal_value,
    replace_in_fstring,
)
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.spans.command_overrides import override_offsets, shown_words
from ms_fmk_transplt.engine.spans.device_strings_spans import (
    ACCELERATOR,
    ACCELERATOR_API,
    DEVICE_OVERRIDE,
    DOTTED_NAME,
    FSTRING,
    INT_DEVICE,
    LITERAL,
    NOT_A_DEVICE,
    NOT_A_DEVICE_ENTRY,
    NOT_DEVICE_KEYWORDS,
    OVERRIDE_MESSAGE,
    dotted_cuda_name,
    names_cuda_api,
)
from ms_fmk_transplt.engine.spans.npu_siblings import accelerator_strings, kept_device_strings

_INT_OPS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)


class DeviceStrings(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        strings, ints = self.tables.device_strings, self.tables.int_device
        self.old, self.new, self.literal = strings.old, strings.new, strings.literal
        self.literal_rule, self.fstring_rule = LITERAL, FSTRING
        self.ints = ints
        self.int_rule = INT_DEVICE
        self.device_calls, self.device_keywords = ints.device_calls, ints.device_keywords
        self.device_leaves, self.int_call_leaves = ints.device_leaves, ints.call_leaves
        self.kept = kept_device_strings(ctx.source, characters=True)
        self.accelerators = accelerator_strings(ctx.source, characters=True)

    def _place(self, node: cst.CSTNode) -> tuple[int, int]:
        pos = self.ctx.metadata(PositionProvider, node)
        return pos.start.line, pos.start.column

    def visit_Arg(self, node: cst.Arg) -> None:
        keyword = node.keyword.value if node.keyword is not None else None
        if keyword in NOT_DEVICE_KEYWORDS and isinstance(node.value, cst.SimpleString):
            value = literal_value(node.value)  # None for exotic escapes: no device either
            if isinstance(value, str) and self.literal.match(value):
                self.ctx.claim(node.value)
                message = f'{keyword}="{value}": not a torch device; left unchanged'
                api = f"{keyword}={value!r}"
                self.ctx.unsupported(node.value, api, NOT_A_DEVICE_ENTRY, message, NOT_A_DEVICE)
            return
        # map_location={"cuda:0": "npu:0"}: the keys name the device a checkpoint was saved on
        # (cuda for a GPU checkpoint), so they must stay as they are.
        if node.keyword is not None and node.keyword.value == "map_location":
            if isinstance(node.value, cst.Dict):
                for element in node.value.elements:
                    if isinstance(element, cst.DictElement):
                        self.ctx.claim(element.key)

    # -- literals --------------------------------------------------------------------------
    def leave_SimpleString(
        self, original: cst.SimpleString, updated: cst.SimpleString
    ) -> cst.SimpleString:
        if id(original) in self.ctx.docstrings or self.ctx.is_claimed(original):
            return updated
        place = self._place(original) if self.kept or self.accelerators else None
        if place in self.kept:
            self.ctx.claim(original)  # beside an "npu" of its own (also for distributed)
            return updated
        if place in self.accelerators:
            self.ctx.claim(original)
            self.ctx.unsupported(
                original, ACCELERATOR_API, NOT_A_DEVICE_ENTRY, ACCELERATOR, NOT_A_DEVICE
            )
            return updated
        body = self.ctx.literal_body(updated)
        if body is not None and names_cuda_api(body):
            return self._dotted_name(original, updated, body)
        override = DEVICE_OVERRIDE.match(body) if body is not None and "=" in body else None
        if (
            override is not None and body is not None and literal_value(original) == body
        ):  # "device=cuda" (command line)
            new_body = body[: override.start(2)] + self.new + body[override.end(2) :]
            new = self.ctx.with_literal_body(updated, new_body)
            rule = self.ctx.rule_for(original, self.literal_rule)
            message = f"device '{body}' -> npu"
            self.ctx.record(original, rule, message, updated.value, new.value)
            return new
        if body is not None and "device=cuda" in body:
            updated = self._command_line(original, updated, body)
        if body is None or not body.startswith(self.old):
            return updated
        value = literal_value(original)  # None for exotic escapes: left alone
        if not isinstance(value, str) or not self.literal.match(value):
            return updated
        new = self.ctx.with_literal_body(updated, self.new + body[len(self.old) :])
        rule = self.ctx.rule_for(original, self.literal_rule)
        self.ctx.record(
            original,
            rule,
            f"device '{value}' -> '{self.new}{value[len(self.old) :]}'",
            updated.value,
            new.value,
        )
        return new

    def _dotted_name(
        self, original: cst.SimpleString, updated: cst.SimpleString, body: str
    ) -> cst.SimpleString:
        value = literal_value(original)  # None for exotic escapes: left alone
        npu = dotted_cuda_name(body, self.tables) if value == body else None
        if npu is None:
            return updated
        new = self.ctx.with_literal_body(updated, npu)
        rule = self.ctx.rule_for(original, DOTTED_NAME)
        self.ctx.record(original, rule, f"'{body}' -> '{npu}'", updated.value, new.value)
        return new

    def _command_line(
        self, original: cst.SimpleString, updated: cst.SimpleString, body: str
    ) -> cst.SimpleString:
        offsets = override_offsets([body])
        if not offsets:
            return updated
        before, after = shown_words([body], offsets, 0, self.new)
        for _, offset in reversed(offsets):
            body = body[:offset] + self.new + body[offset + len(self.old) :]
        new = self.ctx.with_literal_body(updated, body)
        rule = self.ctx.rule_for(original, self.literal_rule)
        self.ctx.record(original, rule, OVERRIDE_MESSAGE, before, after)
        return new

    def _fstring_command_line(
        self, original: cst.FormattedString, updated: cst.FormattedString
    ) -> cst.FormattedString:
        texts = [text for _, text in fstring_texts(updated)]
        offsets = override_offsets(texts)
        if not offsets:
            return updated
        new = replace_in_fstring(updated, offsets, len(self.old), self.new)
        rule = self.ctx.rule_for(original, self.fstring_rule)
        before, after = shown_words(texts, offsets, 0, self.new)
        self.ctx.record(original, rule, OVERRIDE_MESSAGE, before, after)
        return new

    def leave_FormattedString(
        self, original: cst.FormattedString, updated: cst.FormattedString
    ) -> cst.FormattedString:
        if id(original) in self.ctx.docstrings or "b" in updated.prefix.lower():
            return updated
        parts = updated.parts
        if any(isinstance(p, cst.FormattedStringText) and "device=cuda" in p.value for p in parts):
            return self._fstring_command_line(original, updated)
        if not parts or not isinstance(parts[0], cst.FormattedStringText):
            return updated
        text = parts[0].value
        whole_device = (len(parts) == 1 and text == self.old) or (
            len(parts) == 2
            and text == self.old + ":"
            and isinstance(parts[1], cst.FormattedStringExpression)
        )
        if not whole_device:
            return updated
        first = parts[0].with_changes(value=self.new + text[len(self.old) :])
        new = updated.with_changes(parts=[first, *parts[1:]])
        rule = self.ctx.rule_for(original, self.fstring_rule)
        self.ctx.record(
            original,
            rule,
            f"device f-string {self.old}: -> {self.new}:",
            self.ctx.snippet(updated),
            self.ctx.snippet(new),
        )
        return new

    # -- integer device indices -----------------------------------------------------------
    def is_int_device(self, node: cst.BaseExpression) -> bool:
        """Whether an (original) expression is an integer device index."""
        t = self.ints
        if isinstance(node, cst.Integer):
            return True
        if isinstance(node, cst.Name):
            return node.value in t.identifiers
        if isinstance(node, cst.Attribute):
            return node.attr.value in t.identifiers
        if isinstance(node, cst.Subscript):
            seq = node.value
            last = (
                seq.value
                if isinstance(seq, cst.Name)
                else (seq.attr.value if isinstance(seq, cst.Attribute) else None)
            )
            return last in t.sequences
        if isinstance(node, cst.Call):
            names = self.ctx.names_in(node.func)
            if not names or names[0] not in self.int_call_leaves:
                return False
            return (self.ctx.qname(node.func) or "") in t.calls
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _INT_OPS):
            sides = (node.left, node.right)
            if any(isinstance(s, (cst.SimpleString, cst.FormattedString)) for s in sides):
                return False
            return any(self.is_int_device(s) for s in sides)
        return False

    def _npu_device(
        self, original: cst.BaseExpression, updated: cst.BaseExpression
    ) -> cst.SimpleString | cst.FormattedString:
        if isinstance(original, cst.Integer):
            return cst.SimpleString(f'"{self.new}:{original.value}"')
        return cst.FormattedString(
            parts=[
                cst.FormattedStringText(f"{self.new}:"),
                cst.FormattedStringExpression(expression=updated),
            ]
        )

    def _has_int_device_arg(self, call: cst.Call) -> bool:
        is_to = isinstance(call.func, cst.Attribute) and call.func.attr.value == "to"
        for i, arg in enumerate(call.args):
            kw = arg.keyword.value if arg.keyword else None
            if (kw in self.device_keywords or (is_to and kw is None and i == 0)) and (
                self.is_int_device(arg.value)
            ):
                return True
        return False

    def _excluded_callee(self, func: cst.BaseExpression) -> bool:
        """Calls whose device argument is an index by design (torch.cuda.*, .cuda(), .npu())."""
        qn = self.ctx.qname(func) or ""
        if qn.startswith(("torch.cuda", "torch.npu")):
            return True
        if isinstance(func, cst.Attribute) and func.attr.value in ("cuda", "npu"):
            return True
        return self.ctx.is_foreign(func)

    def _candidates(self, original: cst.Call) -> bool:
        """Cheap test: could this call take an integer device at all?"""
        func = original.func
        names = self.ctx.names_in(func)
        if names and names[0] in self.device_leaves:
            return True
        if isinstance(func, cst.Attribute) and func.attr.value == "to" and original.args:
            return True
        return any(
            a.keyword is not None and a.keyword.value in self.device_keywords for a in original.args
        )

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if not self._candidates(original):
            return updated
        func = original.func
        names = self.ctx.names_in(func)
        qn = (self.ctx.qname(func) or "") if names and names[0] in self.device_leaves else ""
        args = list(updated.args)
        changed: list[int] = []
        if qn in self.device_calls:
            positional = [a for a in original.args if a.keyword is None and not a.star]
            if len(original.args) == 1 and len(positional) == 1:
                value = original.args[0].value
                if not self.ctx.is_claimed(value) and self.is_int_device(value):
                    if isinstance(value, cst.Integer):
                        args = [
                            args[0].with_changes(
                                value=cst.SimpleString(f'"{self.new}:{value.value}"')
                            )
                        ]
                    else:
                        args = [
                            cst.Arg(
                                value=cst.SimpleString(f'"{self.new}"'),
                                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
                            ),
                            args[0],
                        ]
                    changed.append(0)
        elif self._has_int_device_arg(original) and not self._excluded_callee(func):
            is_to = isinstance(func, cst.Attribute) and func.attr.value == "to"
            for i, arg in enumerate(original.args):
                if arg.star:
                    continue
                kw = arg.keyword.value if arg.keyword else None
                wanted = kw in self.device_keywords or (is_to and kw is None and i == 0)
                if wanted and not self.ctx.is_claimed(arg.value) and self.is_int_device(arg.value):
                    args[i] = args[i].with_changes(value=self._npu_device(arg.value, args[i].value))
                    changed.append(i)
        if not changed:
            return updated
        new = updated.with_changes(args=args)
        self.ctx.record(
            original.args[changed[0]].value,
            self.int_rule,
            f"integer device index -> '{self.new}:<index>'",
            self.ctx.snippet(updated),
            self.ctx.snippet(new),
        )
        return new
