"""The span pass never gives a file up (raises no Decline): code it used to decline is modelled
(with the output the earlier LibCST implementation gave for it), or only the statement holding
it is left as written, with an engine.unmodelled row (its edits, events, notices and claims
rolled back)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from required_tools import need_module

from ms_fmk_transplt.engine.migrate import migrate_source
from ms_fmk_transplt.engine.options import DEFAULT_OPTIONS, EngineOptions
from ms_fmk_transplt.engine.rules.engine.unmodelled import UNMODELLED
from ms_fmk_transplt.engine.scope_bindings import walk_global
from ms_fmk_transplt.engine.scope_model import UnsupportedScope
from ms_fmk_transplt.engine.scopes import Scopes
from ms_fmk_transplt.engine.spans.decline import Decline, Unreadable
from ms_fmk_transplt.engine.spans.span_pass import PassOutput, span_pass
from ms_fmk_transplt.engine.spans.walker import Walker
from ms_fmk_transplt.safety.tree_depth import TooDeep
from ms_fmk_transplt.tables import load_tables

ROOT = Path(__file__).resolve().parent.parent
SPECIFY_DEVICE = EngineOptions(specify_device=True)
INPUTS = sorted(p for p in (ROOT / "fixtures").rglob("*.py") if not p.name.endswith(".expected.py"))


def _run(source: bytes, options: EngineOptions = DEFAULT_OPTIONS) -> PassOutput | None:
    """The span pass's result (None for a file Python cannot read or one beyond the guards);
    a Decline fails the test."""
    try:
        return span_pass(source, "m.py", load_tables(), options)
    except (Unreadable, TooDeep):
        return None


@pytest.mark.parametrize("options", [DEFAULT_OPTIONS, SPECIFY_DEVICE], ids=["default", "-s"])
def test_no_fixture_is_declined(options: EngineOptions) -> None:
    for case in INPUTS:
        _run(case.read_bytes(), options)


def _unmodelled(result: PassOutput | None) -> list[str]:
    assert result is not None
    return [n.message for n in result.notices if n.rule == UNMODELLED]


# -- former declines, now modelled: the earlier LibCST implementation's result ----------------
MODELLED = {
    "device f-string joined": b'import torch\ny = t.to(f"cuda:{rank}" "")\nz = x.cuda()\n',
    "device f-string joined, after": b'import torch\nd = torch.device("cuda:" f"{rank}")\n',
    "f-string joined starting with cuda": (
        b'import torch\nraise TypeError(f"cudagraph needs {x}. " f"got {y}")\nx.cuda()\n'
    ),
    "decorated first statement": b"@dec\ndef f():\n    return torch.cuda.is_available()\n",
    "decorators after comments": (
        b"#!/usr/bin/env python\n# c\n\n@dec\n\n@dec2(1)\nasync def f():\n"
        b"    return torch.cuda.is_available()\n"
    ),
    "decorator in parentheses": b"@(\n  dec)\ndef f():\n    return torch.cuda.is_available()",
    "no final line break": b"import torch; x = y.cuda()",
    "no final line break, CRLF": b"import torch\r\nx = 1; y = z.cuda()",
}


# what the earlier LibCST implementation gave for them, with and without -s (output; rule,
# line, output line, Before, After of each row)
EXPECTED = {
    "device f-string joined": (
        b'import torch\nimport torch_npu\ny = t.to(f"npu:{rank}" "")\nz = x.npu()\n',
        [
            ("imports.torch_npu", 2, 2, "", "import torch_npu"),
            ("device_strings.fstring", 2, 3, 'f"cuda:{rank}"', 'f"npu:{rank}"'),
            ("tensor_methods.cuda_call", 3, 4, "x.cuda()", "x.npu()"),
        ],
    ),
    "device f-string joined, after": (
        b'import torch\nimport torch_npu\nd = torch.device("npu:" f"{rank}")\n',
        [
            ("imports.torch_npu", 2, 2, "", "import torch_npu"),
            ("device_strings.literal", 2, 3, '"cuda:"', '"npu:"'),
        ],
    ),
    "f-string joined starting with cuda": (
        b'import torch\nimport torch_npu\nraise TypeError(f"cudagraph needs {x}. " f"got {y}")\nx.npu()\n',  # noqa: E501
        [
            ("imports.torch_npu", 2, 2, "", "import torch_npu"),
            ("tensor_methods.cuda_call", 3, 4, "x.cuda()", "x.npu()"),
        ],
    ),
    "decorated first statement": (
        b"import torch_npu\n@dec\ndef f():\n    return torch.npu.is_available()\n",
        [
            ("imports.torch_npu", 2, 2, "", "import torch_npu"),
            (
                "device_api.interface_table",
                3,
                4,
                "torch.cuda.is_available",
                "torch.npu.is_available",
            ),
        ],
    ),
    "decorators after comments": (
        b"#!/usr/bin/env python\n# c\n\nimport torch_npu\n@dec\n\n@dec2(1)\nasync def f():\n    return torch.npu.is_available()\n",  # noqa: E501
        [
            ("imports.torch_npu", 7, 7, "", "import torch_npu"),
            (
                "device_api.interface_table",
                8,
                9,
                "torch.cuda.is_available",
                "torch.npu.is_available",
            ),
        ],
    ),
    "decorator in parentheses": (
        b"import torch_npu\n@(\n  dec)\ndef f():\n    return torch.npu.is_available()",
        [
            ("imports.torch_npu", 3, 3, "", "import torch_npu"),
            (
                "device_api.interface_table",
                4,
                5,
                "torch.cuda.is_available",
                "torch.npu.is_available",
            ),
        ],
    ),
    "no final line break": (
        b"import torch; x = y.npu()\nimport torch_npu",
        [
            ("tensor_methods.cuda_call", 1, 1, "y.cuda()", "y.npu()"),
            ("imports.torch_npu", 2, 2, "", "import torch_npu"),
        ],
    ),
    "no final line break, CRLF": (
        b"import torch\r\nimport torch_npu\r\nx = 1; y = z.npu()",
        [
            ("imports.torch_npu", 2, 2, "", "import torch_npu"),
            ("tensor_methods.cuda_call", 2, 3, "z.cuda()", "z.npu()"),
        ],
    ),
}


@pytest.mark.parametrize("name", MODELLED)
@pytest.mark.parametrize("options", [DEFAULT_OPTIONS, SPECIFY_DEVICE], ids=["default", "-s"])
def test_former_declines_are_migrated_as_libcst_did(name: str, options: EngineOptions) -> None:
    result = migrate_source(MODELLED[name], "m.py", load_tables(), options)
    rows = [(e.rule, e.start_line, e.out_start_line, e.before, e.after) for e in result.events]
    assert (result.output, rows) == EXPECTED[name]  # -s changes nothing more in these


@pytest.mark.parametrize("encoding", ["iso-2022-jp", "utf-7", "hz", "iso-2022-kr"])
@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_stateful_encodings_are_re_encoded_whole(encoding: str, newline: str) -> None:
    """Python reads these (their bytes are ASCII-compatible), but a character's bytes depend on
    the characters before it: the text is re-encoded whole
    (as the earlier LibCST implementation wrote it)."""
    text = "# -*- coding: {0} -*-\nimport torch\nx = '{1}'  # {1}\ny = z.cuda()\nprint(x)\n"
    sample = "한국" if encoding.endswith("kr") else "日本"
    source = text.format(encoding, sample).replace("\n", newline).encode(encoding)
    result = migrate_source(source, "m.py", load_tables(), DEFAULT_OPTIONS)
    expected = text.replace("import torch\n", "import torch\nimport torch_npu\n")
    expected = expected.replace("z.cuda()", "z.npu()").format(encoding, sample)
    assert result.output == expected.replace("\n", newline).encode(encoding)


# -- what is still not modelled: the statement is left as written -------------------------------
LEFT = {
    "parentheses around a with item": (
        b"import torch\nfrom torch.autograd.profiler import profile\n"
        b"with (profile(use_cuda=True)) as prof:\n    y = x.cuda()\n",
        3,
    ),
    "use_cuda= with a conditional or lambda expression": (
        b"import torch\nfrom torch.autograd.profiler import profile\n"
        b"with torch.cuda.device(0), profile(use_cuda=True if a else b) as p:\n"
        b"    y = x.cuda()\n",
        3,
    ),
}


@pytest.mark.parametrize("reason", LEFT, ids=LEFT.keys())
def test_unmodelled_statement_is_left_as_written(reason: str) -> None:
    source, line = LEFT[reason]
    result = _run(source)
    assert result is not None
    assert _unmodelled(result) == [f"statement left as written: the engine does not model {reason}"]
    assert [n.line for n in result.notices] == [line]
    kept = source.splitlines(keepends=True)[line - 1]
    assert kept in result.output  # as written, also the parts rewritten before the decline
    assert b"y = x.npu()" in result.output  # the rest is migrated
    assert all(e.start_line != line for e in result.events)


def test_rollback_undoes_edits_events_and_claims(monkeypatch: pytest.MonkeyPatch) -> None:
    """A decline in the middle of a statement undoes what the statement's earlier nodes did."""
    walk = Walker.walk

    def failing(self: Walker, node: ast.AST, scope: object) -> None:
        if isinstance(node, ast.Constant) and node.value == "boom":
            raise Decline("a test decline")
        walk(self, node, scope)  # type: ignore[arg-type]

    monkeypatch.setattr(Walker, "walk", failing)
    source = (
        b"import torch\n"
        b'f(x.cuda(), torch.cuda.synchronize(), "cuda:0", "boom")\n'
        b'g(x.cuda(), "cuda:0")\n'
    )
    result = _run(source)
    assert result is not None
    assert result.output == (
        b"import torch\nimport torch_npu\n"
        b'f(x.cuda(), torch.cuda.synchronize(), "cuda:0", "boom")\n'
        b'g(x.npu(), "npu:0")\n'
    )
    assert {e.start_line for e in result.events} == {2, 3}  # the import (inserted at 2), line 3
    assert [(n.line, n.rule) for n in result.notices] == [(2, UNMODELLED)]


def test_a_file_whose_only_change_is_rolled_back_is_unchanged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    walk = Walker.walk

    def failing(self: Walker, node: ast.AST, scope: object) -> None:
        if isinstance(node, ast.Constant) and node.value == "boom":
            raise Decline("a test decline")
        walk(self, node, scope)  # type: ignore[arg-type]

    monkeypatch.setattr(Walker, "walk", failing)
    source = b'import torch\nf(x.cuda(), "boom")\n'
    result = _run(source)
    assert result is not None and result.output == source and not result.events


# -- PEP 695 (Python 3.12): the statement binds its name and is left as written -----------------
def test_type_parameters_bind_their_name_without_scope_error() -> None:
    tree = ast.parse("def f(x):\n    return x\nclass C:\n    pass\n")
    for node in tree.body:
        node.type_params = [ast.Name("T")]  # type: ignore[attr-defined]  # (3.12 syntax)
    with pytest.raises(UnsupportedScope, match="type parameters"):  # the LibCST stages' names
        walk_global(Scopes(tree), tree)
    scopes = Scopes(tree)
    scopes.tolerate_generics = True  # the span pass's (spans/module_facts.py)
    walk_global(scopes, tree)
    assert set(scopes.global_scope.bindings) == {"f", "C"}


@pytest.mark.skipif(sys.version_info < (3, 12), reason="PEP 695 syntax parses from Python 3.12")
def test_generic_definitions_are_left_as_written() -> None:
    source = (
        b"import torch\n"
        b"def f[T](x: T) -> T:\n    return x.cuda()\n"
        b"type Device = torch.cuda.device\n"
        b"def g():\n    def h[T](x: T) -> T:\n        pass\n    return w.cuda()\n"
        b"y = z.cuda()\n"
    )
    result = _run(source)
    assert result is not None
    assert len(_unmodelled(result)) == 3  # g's scope holds a generic definition
    assert b"return w.cuda()" in result.output
    assert b"return x.cuda()" in result.output and b"type Device = torch.cuda.device" in (
        result.output
    )
    assert b"y = z.npu()" in result.output


hypothesis = need_module("hypothesis", "hypothesis is not installed")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from test_properties import mutated  # noqa: E402


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_programs_are_not_declined(source: str) -> None:
    _run(source.encode("utf-8"))
