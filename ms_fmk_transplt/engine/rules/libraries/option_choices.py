"""Uses of a CUDA-only library that run only when the user chooses them (rule
``libraries.cuda_only``: a caveat naming the choice, not manual work).

``if neox_args.use_bnb_optimizer: import bitsandbytes as bnb``, ``if args.optim ==
"adamw_bnb_8bit":``, ``if args.use_qlora or args.dpo_use_paged_optimizer:``: the body of an
``if`` whose test reads the run's options (an attribute of ``args``, ``*_args``, ``cfg``,
``config``, ``opts``, ``hparams``, ``flags``), or the name of the optimizer class the options
chose (``optimizer_cls.__name__ == "Adam8bit"``), runs the library only when the user asks
for it. The default run never gets there; on the NPU the user leaves that choice off. The
``else`` of such a test is the default path and stays manual work; a test that probes the
device (``torch.cuda.is_available()``, ``"cuda"``) or the launch (``args.local_rank != -1``,
``args.distributed``, ``world_size > 1``) is no choice of the user's.
"""

from __future__ import annotations

import ast
import re

from ms_fmk_transplt.engine.spans.anchors import line_starts
from ms_fmk_transplt.engine.spans.shared_tree import analysable_tree

_OPTIONS = re.compile(r"^(?:\w+_)?(?:args|cfg|config|opts?|options|hparams|flags)$")
# a test of the device, or of the launch (how many processes: a distributed run is the run the
# NPU cluster is for, not an option to leave off)
_DEVICE = re.compile(r"cuda|device|is_available|gpu|rank|world_size|distributed", re.I)
_MAX_TEST = 60  # characters of the test shown in the tip

Choice = tuple[int, int, str]  # first and last line of the body, the test as written


def option_choices(source: bytes, lines: frozenset[int]) -> list[Choice]:
    """The bodies of the ``if`` statements of ``source`` that run on the user's choice and
    hold one of ``lines`` (found by going down the statements that hold each line only)."""
    tree = analysable_tree(source)
    if tree is None:
        return []
    starts = line_starts(source)  # byte offset of each line (the tests' columns are bytes)
    found: dict[int, Choice] = {}
    for line in sorted(lines):
        _choices_at(tree.body, line, source, starts, found)
    return list(found.values())


def _choices_at(
    body: list[ast.stmt], line: int, source: bytes, starts: list[int], found: dict[int, Choice]
) -> None:
    for stmt in body:
        if not stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            continue
        if isinstance(stmt, ast.If) and stmt.body:
            first, last = stmt.body[0].lineno, stmt.body[-1].end_lineno or stmt.body[-1].lineno
            if first <= line <= last and id(stmt) not in found and _chooses(stmt.test):
                shown = " ".join(_segment(source, starts, stmt.test).split())
                if len(shown) > _MAX_TEST:
                    shown = shown[: _MAX_TEST - 3] + "..."
                found[id(stmt)] = (first, last, shown)
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                _choices_at(inner, line, source, starts, found)
        for holder in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
            _choices_at(holder.body, line, source, starts, found)
        return


def _segment(source: bytes, starts: list[int], node: ast.expr) -> str:
    """The text of ``node`` as written (``ast.get_source_segment`` splits the whole file into
    lines on each call: a file of many choices took seconds)."""
    end_line, end_col = node.end_lineno or node.lineno, node.end_col_offset or 0
    begin = starts[node.lineno - 1] + node.col_offset
    return source[begin : starts[end_line - 1] + end_col].decode("utf-8", "replace")


def _chooses(test: ast.expr) -> bool:
    """The test reads an option of the run (and probes no device)."""
    chooses = False
    for node in ast.walk(test):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _DEVICE.search(node.value):
                return False
        elif isinstance(node, ast.Name) and _DEVICE.search(node.id):
            return False
        elif isinstance(node, ast.Attribute):
            if _DEVICE.search(node.attr):
                return False
            base = node.value
            if node.attr == "__name__":
                chooses = True
            elif isinstance(base, ast.Name) and _OPTIONS.match(base.id):
                chooses = True
            elif isinstance(base, ast.Attribute) and _OPTIONS.match(base.attr):
                chooses = True
    return chooses
