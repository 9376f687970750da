"""Span pass: the device named in a test's expected error text (rule
expected_errors.device_name), and CUDA error messages a fallback tests for (rules
expected_errors.out_of_memory, expected_errors.cuda_message).

``pytest.raises(ValueError, match="outside the visible cuda device count")`` and
``assertRaisesRegex(E, "Device specified is cuda:0")`` expect the message of code that the
migration moves to the NPU (``get_device("npu:0")``, a patched ``device_type = "npu"``): the
message now says ``npu``, so the unchanged expectation fails. The lowercase word ``cuda`` in such
a pattern becomes ``npu``; ``CUDA``, ``torch.cuda`` and ``cuda_x`` are left.
"""

from __future__ import annotations

import ast
import re

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.rules.device_strings.command_overrides import (
    fstring_segments,
    shown_words,
)
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.tables.unsupported_table import Entry

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
OUT_OF_MEMORY = declare(
    "expected_errors.out_of_memory",
    '`if "CUDA out of memory" in str(e):` -> `"NPU out of memory"`',
    "A fallback keyed on the allocator's out-of-memory message (`except RuntimeError as e: if "
    '"CUDA out of memory" in str(e): retry with a smaller batch`) never runs on the NPU: '
    'torch_npu\'s caching allocator raises "NPU out of memory. Tried to allocate ...". In the '
    "text a message test looks for (the left side of `in` / `not in`, the argument of "
    "`startswith`/`endswith`/`find`/`index`/`count`, the pattern of `re.search`/`re.match`/"
    "`re.fullmatch`/`re.findall`), `CUDA out of memory` becomes `NPU out of memory` (`cuda out "
    'of memory`, for a lowered message, `npu out of memory`). A test for `"out of memory"` alone '
    "matches both messages and is left as it is; so is the same text in a print, a log or an "
    "error the code raises itself.",
    caveat="the test now expects torch_npu's message; an out-of-memory error raised by other "
    "code (a library's own check) may still say CUDA",
)
CUDA_MESSAGE = declare(
    "expected_errors.cuda_message",
    '`if "CUDA error" in msg:`, `"cuDNN error"`, `"CUBLAS_STATUS_..."`: a test for a CUDA error '
    "message; left unchanged, one manual row",
    'Code that tells errors apart by their CUDA text (`"CUDA error" in str(e)`, '
    '`"cuDNN error"`, `"CUBLAS_STATUS_ALLOC_FAILED"`, `"NCCL error"`) never matches on the NPU: '
    "torch_npu's errors name the NPU, ACL, HCCL and CANN error codes instead, and there is no "
    "one-to-one message. The test (in the same places as expected_errors.out_of_memory's) is "
    "left as it is and listed: key the branch on the exception type, or on the NPU's message.",
    kind=OPEN_WORK,
)
SHOWN_CHARS = 60  # of the message text in a row
OOM = re.compile(r"(CUDA|cuda) out of memory")
OOM_NEW = {"CUDA": "NPU", "cuda": "npu"}
CUDA_MESSAGES = ("CUDA error", "cuDNN error", "CUBLAS_STATUS_", "NCCL error")
MESSAGE_CALLS = frozenset({"startswith", "endswith", "find", "index", "count"})
REGEX_CALLS = frozenset({"re.search", "re.match", "re.fullmatch", "re.findall", "re.compile"})
CUDA_MESSAGE_ENTRY = Entry(
    "CUDA error message",
    "cuda_only_api",
    "manual",
    "the NPU's errors never say this (torch_npu names the NPU, ACL, HCCL and CANN error "
    "codes): key the branch on the exception type, or on the NPU's message",
)
# the word alone or as cuda:N; not quoted ('cuda' is a value the code names in its own text)
WORD = re.compile(r"(?<![A-Za-z0-9_.\-/'\"])cuda(?![A-Za-z0-9_'\"])")
PYTEST_CHECKS = frozenset({"pytest.raises", "pytest.warns"})
UNITTEST_CHECKS = frozenset({"assertRaisesRegex", "assertRaisesRegexp", "assertWarnsRegex"})
AROUND = 3  # words shown on either side of the changed one
MESSAGE = "device named in an expected message: cuda -> npu"
CONTAINERS = (ast.List, ast.Tuple, ast.Set, ast.Dict)  # `"x" in ("a", "b")`: no message test


def hinted(source: bytes) -> bool:
    return b"cuda" in source and (b"match" in source or b"Regex" in source)


def tests_messages(source: bytes) -> bool:
    """Could the file test an exception's text for a CUDA error message?"""
    return b"out of memory" in source or any(m.encode() in source for m in CUDA_MESSAGES)


def message_literal(node: ast.expr) -> ast.Constant | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node
    return None


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
        self.active = ctx.once(hinted, ctx.source.data)  # (once per file: ctx.once)
        self.messages = ctx.once(tests_messages, ctx.source.data)

    # -- CUDA error messages a fallback tests for ------------------------------------------
    def leave_Compare(self, node: ast.Compare) -> None:
        """``"CUDA out of memory" in str(e)``: the text searched for is the left operand."""
        if self.messages and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            literal = message_literal(node.left)
            if literal is not None and not isinstance(node.comparators[0], CONTAINERS):
                self._message_test(literal)

    def _message_call(self, node: ast.Call) -> None:
        """``msg.startswith("CUDA error")``, ``re.search("CUDA out of memory", msg)``."""
        if not node.args or not isinstance(node.func, (ast.Name, ast.Attribute)):
            return
        literal = message_literal(node.args[0])
        if literal is None:
            return
        if isinstance(node.func, ast.Attribute) and node.func.attr in MESSAGE_CALLS:
            self._message_test(literal)
        elif self.ctx.qname(node.func) in REGEX_CALLS:
            self._message_test(literal)

    def _message_test(self, literal: ast.Constant) -> None:
        text = literal.value
        if self.ctx.is_claimed(literal) or not isinstance(text, str):
            return
        if OOM.search(text):
            self._rename_oom(literal)
        elif any(m in text for m in CUDA_MESSAGES):
            lines = self.ctx.lines(literal)
            shown = text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."
            message = f"a test for the CUDA error message '{shown}': the NPU's errors never say it"
            self.ctx.unsupported(lines, shown, CUDA_MESSAGE_ENTRY, message, rule=CUDA_MESSAGE)

    def _rename_oom(self, literal: ast.Constant) -> None:
        for part in self.ctx.string_parts(literal):
            token = part.token
            body = self.ctx.source.text(token.body_start, token.body_end)
            if token.is_bytes or self.ctx.body(part) != body:
                continue
            for match in OOM.finditer(body):
                at = token.body_start + len(body[: match.start()].encode("utf-8"))
                old = match.group(1)
                self.ctx.replace(at, at + len(old), OOM_NEW[old], expect=old)
                self.ctx.record(
                    self.ctx.lines(literal),
                    OUT_OF_MEMORY,
                    f"out-of-memory message test: {match.group(0)} -> {OOM_NEW[old]} out of memory",
                    match.group(0),
                    f"{OOM_NEW[old]} out of memory",
                )

    def leave_Call(self, node: ast.Call) -> None:
        if self.messages:
            self._message_call(node)
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
