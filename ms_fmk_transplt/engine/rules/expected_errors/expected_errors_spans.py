"""Span pass: the device named in a test's expected error text (rule
expected_errors.device_name).

``pytest.raises(ValueError, match="outside the visible cuda device count")`` and
``assertRaisesRegex(E, "Device specified is cuda:0")`` expect the message of code that the
migration moves to the NPU (``get_device("npu:0")``, a patched ``device_type = "npu"``): the
message now says ``npu``, so the unchanged expectation fails. The lowercase word ``cuda`` in such
a pattern becomes ``npu``; ``CUDA``, ``torch.cuda`` and ``cuda_x`` are left.
"""

from __future__ import annotations

import ast
import re

from ms_fmk_transplt.engine.rules.device_strings.command_overrides import (
    fstring_segments,
    shown_words,
)
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.rule_catalog import declare

RULE = declare(
    "expected_errors.device_name",
    '`pytest.raises(E, match="... cuda:0 ...")`, `assertRaisesRegex(E, "... cuda ...")`: the '
    "device word in an expected message -> `npu`",
    'A test that expects an error or warning message naming the device (`match="Device '
    'specified is cuda:0"`, `match="outside the visible cuda device count"`) checks the '
    "message of code the migration moves to the NPU: that message now says `npu`, and the "
    "unchanged pattern no longer matches. The lowercase word `cuda` (alone or as `cuda:N`) in "
    "the pattern of `pytest.raises`/`pytest.warns` (`match=`) and of unittest's "
    "`assertRaisesRegex`/`assertWarnsRegex` becomes `npu`; `CUDA`, `torch.cuda` and names such "
    "as `cuda_graphs` are left, and so is a quoted `'cuda'`: a value the code names in its own "
    "text (`accelerator='cuda'`).",
    caveat="the pattern now expects npu: check that the message comes from the device (a "
    "device string or a device_type variable), not from the code's own text about CUDA",
)
# the word alone or as cuda:N; not quoted ('cuda' is a value the code names in its own text)
WORD = re.compile(r"(?<![A-Za-z0-9_.\-/'\"])cuda(?![A-Za-z0-9_'\"])")
PYTEST_CHECKS = frozenset({"pytest.raises", "pytest.warns"})
UNITTEST_CHECKS = frozenset({"assertRaisesRegex", "assertRaisesRegexp", "assertWarnsRegex"})
AROUND = 3  # words shown on either side of the changed one
MESSAGE = "device named in an expected message: cuda -> npu"


def hinted(source: bytes) -> bool:
    return b"cuda" in source and (b"match" in source or b"Regex" in source)


def pattern_position(last: str, qualified: str | None) -> tuple[str, int] | None:
    """The keyword and position of the expected-message argument of a check call."""
    if last in ("raises", "warns") and qualified in PYTEST_CHECKS:
        return "match", -1
    if last in UNITTEST_CHECKS:
        return "expected_regex", 1
    return None


def word_offsets(segments: list[str]) -> list[tuple[int, int]]:
    """(segment, character offset) of each device word ``cuda`` in the text segments."""
    return [
        (index, match.start())
        for index, text in enumerate(segments)
        if "cuda" in text
        for match in WORD.finditer(text)
    ]


class ExpectedErrorsSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        self.active = hinted(ctx.source.data)

    def leave_Call(self, node: ast.Call) -> None:
        if not self.active or not isinstance(node.func, (ast.Name, ast.Attribute)):
            return
        last = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
        if last not in UNITTEST_CHECKS and last not in ("raises", "warns"):
            return
        where = pattern_position(last, self.ctx.qname(node.func))
        if where is None:
            return
        keyword, position = where
        pattern = next((k.value for k in node.keywords if k.arg == keyword), None)
        if pattern is None and 0 <= position < len(node.args):
            pattern = node.args[position]
        if isinstance(pattern, (ast.Constant, ast.JoinedStr)) and not self.ctx.is_claimed(pattern):
            self._rewrite(pattern)

    def _rewrite(self, pattern: ast.Constant | ast.JoinedStr) -> None:
        if isinstance(pattern, ast.Constant) and not isinstance(pattern.value, str):
            return
        texts: list[str] = []
        offsets: list[tuple[int, int]] = []
        for part in self.ctx.string_parts(pattern):
            token = part.token
            body = self.ctx.source.text(token.body_start, token.body_end)
            if token.is_bytes or self.ctx.body(part) != body:
                continue  # bytes, or already rewritten by another rule ("cuda:0" -> "npu:0")
            segments = fstring_segments(body) if part.fstring else [(0, body)]
            for index, offset in word_offsets([text for _, text in segments]):
                at = token.body_start + len(body[: segments[index][0] + offset].encode("utf-8"))
                self.ctx.replace(at, at + len("cuda"), "npu", expect="cuda")
                offsets.append((len(texts) + index, offset))
            texts.extend(text for _, text in segments)
        if offsets:
            before, after = shown_words(texts, offsets, AROUND, "npu")
            self.ctx.record(self.ctx.lines(pattern), RULE, MESSAGE, before, after)
