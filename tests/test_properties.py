"""Property-based tests (hypothesis): mutations of our fixtures, and programs generated from
LibCST's node grammar (hypothesmith) with CUDA code spliced in. For every input that parses,
the output parses, the migration is idempotent, and every line the engine did not mean to change
is byte-identical (the recorded events cover exactly the diff)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import libcst as cst
from helpers import assert_events_match_diff, tables_for
from required_tools import need_module

from ms_fmk_transplt.commands.rule_docs import fixture_parsed
from ms_fmk_transplt.engine import migrate_source

hypothesis = need_module("hypothesis", "hypothesis is not installed")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    p.read_text(encoding="utf-8").splitlines(keepends=True)
    for p in sorted((ROOT / "fixtures" / "rules").glob("*/*.py"))
    if not p.name.endswith(".expected.py") and fixture_parsed(p)
]
SNIPPETS = [
    "x = torch.ones(2).cuda()\n",
    "torch.cuda.synchronize()\n",
    "d = 'cuda:0'\n",
    "dist.init_process_group('nccl')\n",
    "y = x.to(local_rank)\n",
    "import torch.cuda as tc\n",
    "# cuda in a comment\n",
    '"""cuda docstring"""\n',
    "z = f'cuda:{rank}'\n",
    "torch.backends.cudnn.benchmark = True\n",
    "from torch.cuda.amp import autocast\n",
]


@st.composite
def mutated(draw) -> str:
    lines = list(draw(st.sampled_from(SOURCES)))
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["insert", "delete", "duplicate", "swap"]))
        i = draw(st.integers(0, max(0, len(lines) - 1)))
        if op == "insert":
            lines.insert(i, draw(st.sampled_from(SNIPPETS)))
        elif lines and op == "delete":
            del lines[i]
        elif lines and op == "duplicate":
            lines.insert(i, lines[i])
        elif len(lines) > 1:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


def check(source: str) -> bool:
    """The properties on one input; False (nothing checked) when LibCST cannot parse it."""
    data = source.encode("utf-8")
    try:
        cst.parse_module(data)
    except cst.ParserSyntaxError:
        return False  # only inputs that parse are in scope
    result = migrate_source(data, "m.py", tables_for())
    cst.parse_module(result.output)  # the output parses
    try:
        ast.parse(data)
    except (SyntaxError, ValueError):
        pass
    else:
        ast.parse(result.output)  # and CPython reads it when it read the input
    again = migrate_source(result.output, "m.py", tables_for())
    assert again.output == result.output  # idempotent
    assert_events_match_diff(data, result.output, result.events, "mutation")
    return True


def parsed_share(inputs: st.SearchStrategy[str], examples: int) -> tuple[int, int]:
    """Runs ``check`` on ``examples`` inputs hypothesis draws: (inputs checked, inputs drawn)."""
    counts = {True: 0, False: 0}

    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,  # the same inputs on every run: the share below is not luck
        database=None,
    )
    @given(inputs)
    def run(source: str) -> None:
        counts[check(source)] += 1

    run()
    return counts[True], counts[True] + counts[False]


def test_migration_properties() -> None:
    """Mutated fixtures; most mutations keep the file parsable, so most are checked."""
    checked, drawn = parsed_share(mutated(), 150)
    assert drawn >= 100 and checked >= drawn // 2, (checked, drawn)


hypothesmith = need_module("hypothesmith", "hypothesmith is not installed")
from spliced_programs import spliced  # noqa: E402

# MSFT_FUZZ_EXAMPLES=5000 for a long local hunt; CI runs a short one
GENERATED = int(os.environ.get("MSFT_FUZZ_EXAMPLES", "60"))


def test_generated_programs() -> None:
    """Programs generated from LibCST's node grammar with CUDA code spliced in: they come from
    LibCST's grammar, so nearly all of them parse and are checked."""
    checked, drawn = parsed_share(spliced(hypothesmith.from_node()), GENERATED)
    assert drawn >= GENERATED // 2 and checked >= 0.9 * drawn, (checked, drawn)
