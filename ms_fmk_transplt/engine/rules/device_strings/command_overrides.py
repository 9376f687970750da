"""Device overrides inside a command line held in a string (rule device_strings.literal):
``f\"\"\"tune run eval output_dir={tmp} device=cuda \"\"\".split()`` passes ``device=cuda`` to
the program it starts, so the ``cuda`` names a device even though the string is not one.

A string counts as a command line when it runs a launcher (``python``, ``torchrun``, ...) or has
at least two option-like words (``key=value``, ``-x``, ``--name``) counting the override; prose
("set device=cuda first") has one. Both passes
see a string as its text segments, split at the ``{...}`` fields of an f-string (raw source
text, escapes and ``{{`` as written), and replace the offsets this module returns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.tables.unsupported_table import LAUNCHERS

OVERRIDE_MESSAGE = "device override in a command line: device=cuda -> device=npu"

# a whole word `device=cuda`, `--device=cuda:0`, `model.device=cuda` in the text
_OVERRIDE = re.compile(r"(?:(?<=\s)|^)-{0,2}[A-Za-z_.]*device=(cuda)(?::\d+)?(?=\s|$)")
_OPTION = re.compile(r"(?:(?<=\s)|^)(?:-{1,2}[A-Za-z]|[A-Za-z_][A-Za-z0-9_.\-]*=)")


def override_offsets(segments: Sequence[str]) -> list[tuple[int, int]]:
    """(segment index, offset of ``cuda``) for each device override of a command line."""
    found = []
    last = len(segments) - 1
    for index, text in enumerate(segments):
        if "device=cuda" not in text:
            continue
        for match in _OVERRIDE.finditer(text):
            if (match.start() == 0 and index > 0) or (match.end() == len(text) and index < last):
                continue  # glued to an f-string field: `{prefix}device=cuda`
            found.append((index, match.start(1)))
    if not found:
        return []
    options = sum(len(_OPTION.findall(text)) for text in segments)
    launched = any(LAUNCHERS.search(text) for text in segments)  # "python train.py --device=cuda"
    return found if options >= 2 or launched else []


def fstring_segments(body: str) -> list[tuple[int, str]]:
    """The text segments of an f-string's raw body, each with its offset in the body; a field
    (``{expr}``, ``{x:{width}}``) separates two segments (an empty one where fields touch)."""
    segments: list[tuple[int, str]] = []
    start, depth, i = 0, 0, 0
    while i < len(body):
        char = body[i]
        if depth == 0 and body.startswith(("{{", "}}"), i):
            i += 2
            continue
        if char == "{":
            if depth == 0:
                segments.append((start, body[start:i]))
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                start = i + 1
        i += 1
    segments.append((start, body[start:]))
    return segments


def shown_words(
    texts: Sequence[str], offsets: Sequence[tuple[int, int]], around: int, new: str
) -> tuple[str, str]:
    """Before/After columns for ``cuda`` -> ``new`` at ``offsets``: each changed word with
    ``around`` words on either side (a pattern or a command line can be pages long)."""
    before, after = [], []
    for index, offset in offsets:
        text = texts[index]
        words = list(re.finditer(r"\S+", text))
        at = next(i for i, w in enumerate(words) if w.start() <= offset < w.end())
        start = words[max(0, at - around)].start()
        end = words[min(len(words) - 1, at + around)].end()
        before.append(text[start:end])
        after.append(text[start:offset] + new + text[offset + len("cuda") : end])
    return " … ".join(before), " … ".join(after)


def rewrite_overrides(
    ctx: SpanContext,
    where: tuple[int, str, list[tuple[int, str]]],
    rule: str,
    lines: tuple[int, int],
    old: str,
    new: str,
) -> None:
    """Rewrite the device overrides of a command line: ``where`` is the offset of the string's
    body in the file, the body, and its text segments with their offsets in the body."""
    body_start, body, segments = where
    offsets = override_offsets([text for _, text in segments])
    if not offsets:
        return
    for index, offset in offsets:
        at = body_start + len(body[: segments[index][0] + offset].encode("utf-8"))
        ctx.replace(at, at + len(old), new, expect=old)
    before, after = shown_words([text for _, text in segments], offsets, 0, new)
    ctx.record(lines, rule, OVERRIDE_MESSAGE, before, after)
