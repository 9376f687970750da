"""Span pass: device specs (``"cuda:0"``, ``f"cuda:{rank}"``) and integer device indices
(rules device_strings.*, declared here)."""

from __future__ import annotations

import ast
import re

from ms_fmk_transplt.catalogue.rule_catalog import declare
from ms_fmk_transplt.engine.rules.device_strings.command_overrides import (
    fstring_segments,
    rewrite_overrides,
)
from ms_fmk_transplt.engine.rules.device_strings.device_consumers import (
    call_key,
    consumer_flows,
    hold,
    key,
    report,
)
from ms_fmk_transplt.engine.rules.device_strings.device_labels import (
    ACCELERATOR,
    ACCELERATOR_API,
    NOT_A_DEVICE,
    NOT_A_DEVICE_ENTRY,
    NOT_DEVICE_KEYWORDS,
    DeviceLabels,
)
from ms_fmk_transplt.engine.rules.device_strings.device_names import (
    INT_OPS,
    holds_device_index,
    holds_device_name,
    is_integer,
    may_hold_index,
    option_holds_device_name,
)
from ms_fmk_transplt.engine.rules.device_strings.device_parameters import PassedIndices
from ms_fmk_transplt.engine.rules.device_strings.dotted_names import (
    dotted_cuda_name,
    names_cuda_api,
)
from ms_fmk_transplt.engine.rules.family_spec import Folding
from ms_fmk_transplt.engine.rules.libraries.library_rows import fold_rows_per_file
from ms_fmk_transplt.engine.spans.call_args import Argument, source_args
from ms_fmk_transplt.engine.spans.npu_siblings import accelerator_strings, kept_device_strings
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext, StringPart
from ms_fmk_transplt.events import Notice

LITERAL = declare(
    "device_strings.literal",
    'a literal whose whole value is a device spec: `"cuda"`, `"cuda:0"`, `"cuda:%d"` -> `"npu..."`',
    "A string whose entire value is a CUDA device spec names a device wherever it is (a "
    "`torch.device`, a `.to()`, a `device=` argument, a default in argparse, a comparison with "
    "`x.device.type`), so it is rewritten everywhere to keep values consistent across the program. "
    'Strings that merely mention cuda (`"Using cuda: %s"`, help texts, docstrings, comments) are '
    "not device specs and are left alone; a config override on a command line "
    '(`"device=cuda"`, `"--device=cuda:0"`) names a device too. Nor is a `"cuda"` (or `"nccl"`) '
    "beside an "
    '`"npu"` (`"hccl"`) of the code\'s own -- an if/elif chain with an NPU arm, a tuple or '
    "list naming both, an enum table with an NPU member, a dict with both keys: rewritten, it "
    "would shadow the NPU arm written for the NPU -- nor an option named `cuda` "
    '(`{"cuda": cuda}`). Nor is a label: a key of a dict that is no table keyed by device type '
    '(`{"enabled": True, "cpu": True, "cuda": True}`) and the lookups of such a key '
    '(`cfg.pop("cuda")`, `cfg["cuda"]`, `cfg.get("cuda")`, `"cuda" in cfg`) -- a table such as '
    '`{"cuda": torch.float16, "cpu": torch.bfloat16}`, or one the file looks up by a device '
    "(`[device.type]`), is migrated with its lookups --, the argument of a custom pytest marker "
    '(`@pytest.mark.runs_on(["cuda"])`; `parametrize` values are devices, migrated), or a value '
    "compared with one of a library that is not torch (`foreign_cuda_roots` in "
    "rules/interface_table.json: Triton's `driver.active.get_current_target().backend == "
    '"cuda"`, where triton-ascend says "npu"), also through a name assigned one. A device given '
    "to a library that is not torch is rule device_strings.non_torch_consumer's.",
)
FSTRING = declare(
    "device_strings.fstring",
    '`f"cuda:{rank}"` -> `f"npu:{rank}"`',
    "An f-string whose literal part is a device spec prefix followed by an index expression is a "
    "device name built at run time; its `cuda:` prefix becomes `npu:`. An f-string that only "
    'mentions cuda (`f"cuda:{i} is busy"`) is left alone.',
)
INT_DEVICE = declare(
    "device_strings.int_device",
    "integer device indices: `torch.device(rank)`, `x.to(local_rank)` -> the NPU of that index",
    "PyTorch reads a bare integer device as a CUDA index, which fails on an NPU host. Where an "
    "integer is passed as a device (`torch.device(i)`, `.to(i)`, `device=i`, and FSDP's "
    "`device_id=i`, which FSDP hands to `torch.device(i)`) it is made explicit: "
    '`torch.device("npu", i)`, `.to(f"npu:{i}")`, `device_id=f"npu:{i}"`. Integers are '
    "recognised by name (`local_rank`, "
    "`rank`, `gpu`, `args.gpu`, `device_id`, ...; list `int_device` in "
    "rules/interface_table.json), "
    "integer literals, `int(...)`, `dist.get_rank()` and arithmetic on those, and by what the "
    "file binds a name to (`dev = torch.cuda.device_count() - 1`: an index). A listed name the "
    "file binds to a whole device name is no index and stays as written: "
    "`local_device = get_accelerator().device_name(rank)`, a `str` parameter, a string with "
    'letters (`gpu = "cuda:0"`, migrated as a literal), an argparse option whose default is one '
    '(made explicit, `"npu:npu:0"` would fail); digits (`os.environ["LOCAL_RANK"]`) are an index.',
    caveat="the expression is taken for an integer device index (by its name or by what the file "
    "binds it to); check it is one",
)

DOTTED_NAME = declare(
    "device_strings.dotted_name",
    "a string naming a torch.cuda API: `'torch.cuda.HalfTensor'`, "
    "`mock.patch('torch.cuda.synchronize')`, `'pkg.mod.torch.cuda.device_count'` -> "
    "`'torch.npu...'`",
    "Some code names CUDA APIs in strings: tensor type names compared with `x.type()` "
    "(`param.type() in ['torch.cuda.HalfTensor', 'torch.cuda.BFloat16Tensor']` -- on the NPU "
    "`.type()` returns `torch.npu.HalfTensor`, so the test would fail and fp16 runs raise) and "
    "dotted patch targets in tests (`mock.patch('torch.cuda.synchronize')`, also through a "
    "module that imports torch: `mock.patch('pkg.utils.torch.cuda.device_count')`; they must "
    "patch what the migrated code calls). A literal whose whole value is such a name is "
    "migrated exactly like the code it names: only when the target's `torch.npu` has it, "
    "never a capability probe (device_api.capability_probe keeps those on torch.cuda).",
)
FOLDED_PER_FILE = frozenset({NOT_A_DEVICE})  # one row per file, listing the lines (migrate.py)
# a config override on a command line (`tune run ... device=cuda`, `--device=cuda:0`)
DEVICE_OVERRIDE = re.compile(r"(-{0,2}[A-Za-z_.]*device)=(cuda)(:\d+)?$")


class DeviceStringsSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        strings, ints = self.tables.device_strings, self.tables.int_device
        self.old, self.new, self.literal = strings.old, strings.new, strings.literal
        self.literal_rule, self.fstring_rule = LITERAL, FSTRING
        self.ints = ints
        self.int_rule = INT_DEVICE
        self.device_calls, self.device_keywords = ints.device_calls, ints.device_keywords
        self.device_leaves, self.int_call_leaves = ints.device_leaves, ints.call_leaves
        source = ctx.source.data  # (each scan once per file: ctx.once)
        self.kept = ctx.once(kept_device_strings, source)
        self.accelerators = ctx.once(accelerator_strings, source)
        self.passed = PassedIndices(ctx)
        self.labels = DeviceLabels(ctx)  # dict keys, lookups, pytest markers, Triton's backend
        self.flows = ctx.once(consumer_flows, source, self.tables.device_consumers)

    def visit_keyword(self, node: ast.keyword) -> None:
        value = node.value
        if node.arg in NOT_DEVICE_KEYWORDS and isinstance(value, ast.Constant):
            if isinstance(value.value, str) and self.literal.match(value.value):
                self.ctx.claim(value)
                message = f'{node.arg}="{value.value}": not a torch device; left unchanged'
                api = f"{node.arg}={value.value!r}"
                self.ctx.unsupported(self.ctx.lines(value), api, NOT_A_DEVICE_ENTRY, message,
                                     NOT_A_DEVICE)  # fmt: skip
            return
        # map_location={"cuda:0": "npu:0"}: the keys name the device a checkpoint was saved on
        if node.arg == "map_location" and isinstance(node.value, ast.Dict):
            for key in node.value.keys:
                if key is not None:
                    self.ctx.claim(key)

    # -- devices of libraries that are not torch (device_consumers.py) ---------------------
    def visit_Call(self, node: ast.Call) -> None:
        uses = self.flows.calls.get(call_key(node)) if self.flows.calls else None
        if uses:
            report(self.ctx, node, uses, self.flows.held)

    def visit_Assign(self, node: ast.Assign | ast.AnnAssign) -> None:
        if self.flows.held and node.value is not None and key(node.value) in self.flows.held:
            hold(self.ctx, node.value)

    visit_AnnAssign = visit_Assign

    # -- literals --------------------------------------------------------------------------
    def leave_SimpleString(self, part: StringPart) -> None:
        if part.docstring or self.ctx.is_claimed(part.key):
            return
        node = part.node
        place = (node.lineno, node.col_offset)
        if part.whole and (place in self.kept or place in self.flows.kept):
            self.ctx.claim(part.key)  # beside an "npu" of its own (also for distributed)
            return
        if part.whole and place in self.accelerators:
            self.ctx.claim(part.key)
            self.ctx.unsupported(part.lines, ACCELERATOR_API, NOT_A_DEVICE_ENTRY, ACCELERATOR,
                                 NOT_A_DEVICE)  # fmt: skip
            return
        body = self.ctx.body(part)
        if body is not None and names_cuda_api(body):
            self._dotted_name(part, body)
            return
        override = DEVICE_OVERRIDE.match(body) if body is not None and "=" in body else None
        if override is not None and part.value == body:  # "device=cuda" on a command line
            before = self.ctx.token_text(part)
            at = part.token.body_start + override.start(2)
            self.ctx.replace(at, at + len(self.old), self.new, expect=self.old)
            rule = self.ctx.rule_for(part.key, self.literal_rule)
            after = self.ctx.token_text(part)
            self.ctx.record(part.lines, rule, f"device '{body}' -> npu", before, after)
            return
        if body is not None and "device=cuda" in body:
            rule = self.ctx.rule_for(part.key, self.literal_rule)
            where = (part.token.body_start, body, [(0, body)])
            rewrite_overrides(self.ctx, where, rule, part.lines, self.old, self.new)
        if body is None or not body.startswith(self.old):
            return
        value = part.value
        if not isinstance(value, str) or not self.literal.match(value):
            return
        if part.whole and isinstance(node, ast.Constant) and self.labels.is_label(node):
            self.ctx.claim(part.key)  # a dict key, a lookup, a marker's label, Triton's backend
            return
        before = self.ctx.token_text(part)
        start = part.token.body_start
        self.ctx.replace(start, start + len(self.old), self.new, expect=self.old)
        rule = self.ctx.rule_for(part.key, self.literal_rule)
        self.ctx.record(
            part.lines,
            rule,
            f"device '{value}' -> '{self.new}{value[len(self.old) :]}'",
            before,
            self.ctx.token_text(part),
        )

    def _dotted_name(self, part: StringPart, body: str) -> None:
        npu = dotted_cuda_name(body, self.tables) if part.value == body else None
        if npu is None:
            return
        before = self.ctx.token_text(part)
        start = part.token.body_start
        self.ctx.replace(start, start + len(body), npu, expect=body)
        rule = self.ctx.rule_for(part.key, DOTTED_NAME)
        self.ctx.record(part.lines, rule, f"'{body}' -> '{npu}'", before, self.ctx.token_text(part))

    def leave_FormattedString(self, node: ast.JoinedStr) -> None:
        token = self.ctx.string_token(node)
        if token is None or self.ctx.is_docstring(node):
            return
        body, values = token.body, node.values
        whole_device = (
            len(values) == 1 and body == self.old and isinstance(values[0], ast.Constant)
        ) or (
            len(values) == 2
            and body.startswith(self.old + ":{")
            and isinstance(values[0], ast.Constant)
            and values[0].value == self.old + ":"
            and isinstance(values[1], ast.FormattedValue)
        )
        if not whole_device:
            if "device=cuda" in body:
                rule = self.ctx.rule_for(node, self.fstring_rule)
                where = (token.body_start, body, fstring_segments(body))
                rewrite_overrides(self.ctx, where, rule, self.ctx.lines(node), self.old, self.new)
            return
        before = self.ctx.snippet(node)
        start = token.body_start
        self.ctx.replace(start, start + len(self.old), self.new, expect=self.old)
        self.ctx.record(
            self.ctx.lines(node),
            self.ctx.rule_for(node, self.fstring_rule),
            f"device f-string {self.old}: -> {self.new}:",
            before,
            self.ctx.snippet(node),
        )

    # -- integer device indices -----------------------------------------------------------
    def is_int_device(self, node: ast.AST) -> bool:
        """Whether an (original) expression is an integer device index."""
        t = self.ints
        if is_integer(node):
            return True
        if isinstance(node, ast.Name):
            if node.id not in t.identifiers:  # dev = torch.cuda.device_count() - 1
                data = self.ctx.source.data
                return may_hold_index(data) and holds_device_index(data, self._binding_nodes(node))
            return not holds_device_name(self.ctx.source.data, self._binding_nodes(node))
        if isinstance(node, ast.Attribute):
            return node.attr in t.identifiers and not option_holds_device_name(
                self.ctx.source.data, node.attr
            )
        if isinstance(node, ast.Subscript):
            seq = node.value
            last = (
                seq.id
                if isinstance(seq, ast.Name)
                else (seq.attr if isinstance(seq, ast.Attribute) else None)
            )
            return last in t.sequences
        if isinstance(node, ast.Call):
            if self.ctx.last_name(node.func) not in self.int_call_leaves:
                return False
            return (self.ctx.qname(node.func) or "") in t.calls
        if isinstance(node, ast.BinOp) and isinstance(node.op, INT_OPS):
            sides = (node.left, node.right)
            if any(self.ctx.is_single_string(s) for s in sides):
                return False
            return any(self.is_int_device(s) for s in sides)
        return False

    def _binding_nodes(self, node: ast.Name) -> list[ast.AST]:
        """The bindings a read sees: what they hold says whether the name holds a device name
        (``local_device = get_accelerator().device_name(rank)``, a ``str`` parameter) or an
        index (device_names.py)."""
        bindings = self.ctx.scopes.bindings_read(node, self.ctx.scope_of(node))
        return [b.node for b in bindings if b.node is not None and b.imported is None]

    def _keywords(self, call: ast.Call) -> frozenset[str]:
        """The keywords of this call that take a device: ``device=``, and those the table
        names for this callee (``FSDP(device_id=)``)."""
        if not any(kw.arg in self.ints.call_keywords for kw in call.keywords):
            return self.device_keywords
        extra = self.ints.call_device_keywords.get(self.ctx.qname(call.func) or "")
        return self.device_keywords | extra if extra else self.device_keywords

    def _has_int_device_arg(self, call: ast.Call, keywords: frozenset[str]) -> bool:
        is_to = isinstance(call.func, ast.Attribute) and call.func.attr == "to"
        for i, arg in enumerate(source_args(call)):
            if (
                arg.keyword in keywords or (is_to and arg.keyword is None and i == 0)
            ) and self.is_int_device(arg.value):
                return True
        return False

    def _excluded_callee(self, func: ast.AST) -> bool:
        """Calls whose device argument is an index by design (torch.cuda.*, .cuda(), .npu())."""
        qn = self.ctx.qname(func) or ""
        if qn.startswith(("torch.cuda", "torch.npu")):
            return True
        if isinstance(func, ast.Attribute) and func.attr in ("cuda", "npu"):
            return True
        return self.ctx.is_foreign(func)

    def _candidates(self, call: ast.Call) -> bool:
        """Cheap test: could this call take an integer device at all?"""
        func = call.func
        if self.ctx.last_name(func) in self.device_leaves:
            return True
        if isinstance(func, ast.Attribute) and func.attr == "to" and (call.args or call.keywords):
            return True
        keywords = self.device_keywords | self.ints.call_keywords
        return any(kw.arg in keywords for kw in call.keywords)

    def leave_Call(self, node: ast.Call) -> None:
        if not self._candidates(node):
            return
        func = node.func
        leaf = self.ctx.last_name(func)
        qn = (self.ctx.qname(func) or "") if leaf in self.device_leaves else ""
        args = source_args(node)
        keywords = self._keywords(node)
        before = None
        changed: list[int] = []
        if qn in self.device_calls:
            positional = [a for a in args if a.keyword is None and not a.star]
            if len(args) == 1 and len(positional) == 1:
                value = args[0].value
                if not self.ctx.is_claimed(value) and self.is_int_device(value):
                    before = self.ctx.snippet(node)
                    start, end = self.ctx.owned(value, node)
                    if is_integer(value):
                        self.ctx.replace(start, end, f'"{self.new}:{self._text(value)}"')
                    else:
                        self.ctx.replace(start, start, f'"{self.new}", ')
                        self.ctx.prefixed.add(id(value))
                    changed.append(0)
        elif self._has_int_device_arg(node, keywords) and not self._excluded_callee(func):
            is_to = isinstance(func, ast.Attribute) and func.attr == "to"
            for i, arg in enumerate(args):
                if arg.star:
                    continue
                wanted = arg.keyword in keywords or (is_to and arg.keyword is None and i == 0)
                if wanted and not self.ctx.is_claimed(arg.value) and self.is_int_device(arg.value):
                    if before is None:
                        before = self.ctx.snippet(node)
                    self._npu_device(arg.value, arg.node if arg.keyword is not None else node)
                    changed.append(i)
        if not changed:
            to = isinstance(func, ast.Attribute) and func.attr == "to"
            self._device_arguments(node, args, to or qn in self.device_calls)
            return
        self.ctx.record(
            self.ctx.lines(args[changed[0]].value),
            self.int_rule,
            f"integer device index -> '{self.new}:<index>'",
            before or "",
            self.ctx.snippet(node),
        )

    def _device_arguments(self, node: ast.Call, args: list[Argument], first: bool) -> None:
        """Names read as a device here that a call of the file fills with an int index
        (``first``: the first positional argument is a device: ``.to(d)``, ``torch.device(d)``)."""
        keywords = self._keywords(node)
        for i, arg in enumerate(args):
            if arg.keyword in keywords or (first and arg.keyword is None and i == 0):
                self.passed.check(arg.value, node)

    def _text(self, node: ast.AST) -> str:
        start, end = self.ctx.source.span(node)
        return self.ctx.source.data[start:end].decode("utf-8")

    def _npu_device(self, value: ast.expr, parent: ast.AST) -> None:
        start, end = self.ctx.owned(value, parent)
        if is_integer(value):
            self.ctx.replace(start, end, f'"{self.new}:{self._text(value)}"')
        else:
            self.ctx.replace(start, start, f'f"{self.new}:{{')
            self.ctx.replace(end, end, '}"')


def fold(notices: list[Notice], done: Folding) -> list[Notice]:
    """The family's rows folded (Family.fold): one row per file of FOLDED_PER_FILE."""
    return fold_rows_per_file(notices, FOLDED_PER_FILE, done.migrated)
