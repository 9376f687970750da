"""Span pass: what cannot run on the NPU as is (rules unsupported.<category>,
declared in unsupported_rows.py). Nothing is rewritten: each occurrence is a notice."""

from __future__ import annotations

import ast
import dataclasses
import re

from ms_fmk_transplt.engine.project_facts import (
    ProjectFacts,
    absolute_module,
    project_op_namespaces,
)
from ms_fmk_transplt.engine.rules.device_api.probe_shapes import checks_available
from ms_fmk_transplt.engine.rules.unsupported.launch_values import (
    command_entry,
    command_values,
    in_message,
    removed_name,
    removing_loops,
)
from ms_fmk_transplt.engine.rules.unsupported.launch_values import command_message as launch_message
from ms_fmk_transplt.engine.scope_model import full_name
from ms_fmk_transplt.engine.spans.call_args import source_args
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext, StringPart
from ms_fmk_transplt.tables.unsupported_table import (
    IMPORT_ERRORS,
    IMPORT_MODULE,
    Entry,
    checks_presence,
    registered_op_namespaces,
)

TYPE_TESTS = frozenset({"isinstance", "issubclass"})
DATA_PARALLEL = "data_parallel"  # the category whose classes are only reported where used
CPP_ONLY = "cpp_only"  # a cpp_extension build with nvcc flags but only C/C++ sources
EXITS = frozenset({"exit", "quit", "sys.exit", "os._exit"})
DEVICE_KEYWORDS = frozenset({"device", "map_location", "device_map"})
# a library's own device spec: RWKV's strategy="cuda fp16 *10 -> cpu fp32" (the word cuda in it)
SPEC_KEYWORDS = frozenset({"strategy"})
CALLS_KEPT = 4096  # the answers of may_call_module a file's walk keeps (UnsupportedSpans)
CUDA_WORD = re.compile(r"(?<![\w.-])cuda(?::\d+)?(?![\w-])")
LIBRARY_SPEC = Entry(
    "library device spec",
    "dynamic_device",
    "manual",
    'a device spec that names cuda inside a longer string (strategy="cuda fp16", '
    'device="cuda bf16"): the library parses it itself, so it is left unchanged; use the '
    "library's NPU spelling if it has one, else run that part on the CPU or port it",
)


def _gives_up(body: list[ast.stmt]) -> bool:
    """A handler that re-raises or exits is no fallback (``except ImportError: raise ...``)."""
    last = body[-1] if body else None
    if isinstance(last, ast.Raise):
        return True
    return (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and (full_name(last.value.func) in EXITS)
    )


def catches_import_error(node: ast.Try) -> bool:
    for handler in node.handlers:
        if _gives_up(handler.body):
            continue
        if handler.type is None:
            return True
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any(full_name(kind) in IMPORT_ERRORS for kind in kinds):
            return True
    return False


def command_message(name: str) -> str:
    return f"{name}= set in a command line (a string); left unchanged"


class UnsupportedSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        self.table = self.tables.unsupported
        self.covered: set[int] = set()
        self.device_calls = self.tables.int_device.device_calls
        self._foreign_call: tuple[ast.AST, bool] | None = None
        self.optional_names: set[str] = set()  # names bound by optional imports
        self._own_ops: frozenset[str] | None = None  # op namespaces registered in Python
        self._removing: set[str] | None = None  # lists of variables the file's loops remove
        # may_call_module by the dotted name of the called function (the file's imports bind
        # the same names throughout), up to CALLS_KEPT of them
        self._may_call: dict[tuple[str, ...], bool] = {}

    def _registered(self, qualified: str) -> bool:
        if self._own_ops is None:
            own = registered_op_namespaces(self.ctx.source.data)
            self._own_ops = own | project_op_namespaces(self.ctx.options)
        return qualified.split(".")[2] in self._own_ops

    def _guarded(self) -> bool:
        """Inside a ``try`` that catches ImportError: an optional import with a fallback."""
        unit = self.ctx.unit
        return unit is not None and any(
            isinstance(a, ast.Try) and catches_import_error(a) for a in unit.ancestors
        )

    def _import_row(self, lines: tuple[int, int], name: str, entry: Entry, bound: str = "") -> None:
        if self._guarded():
            entry = entry.optional()
            self.optional_names.add(bound)  # its calls have the same fallback
        self.ctx.unsupported(lines, name, entry)

    def _module(self, dotted: str, own_only: bool = False) -> Entry | None:
        """The entry of an imported module: the table's, else a CUDA extension the project
        builds (its facts: ``CUDAExtension("pkg._C", ...)`` in its setup.py); ``own_only``:
        only the latter (a relative import names a module of the project)."""
        entry = None if own_only else self.table.module(dotted)
        if entry is not None:
            return entry
        facts = self._facts()
        found = facts.extension(dotted) if facts is not None else None
        return self.table.project_extension(*found) if found is not None else None

    def _facts(self) -> ProjectFacts | None:
        return self.ctx.options.project if self.ctx.options is not None else None

    def _extensions(self) -> bool:
        facts = self._facts()
        return facts is not None and bool(facts.extensions)

    def _cover(self, node: ast.AST) -> None:
        cur = node
        while isinstance(cur, (ast.Attribute, ast.Call)):
            cur = cur.value if isinstance(cur, ast.Attribute) else cur.func
            self.covered.add(id(cur))

    # -- PyTorch APIs by qualified name ------------------------------------------------------
    def _check_name(self, node: ast.Attribute | ast.Name) -> None:
        if self.ctx.import_depth or id(node) in self.covered or self.ctx.is_claimed(node):
            self._cover(node)
            return
        names = self.ctx.names_in(node)
        if not self.table.may_name_api(
            names, self.ctx.import_bound.get(names[-1]) if names else None
        ):
            return
        qn = self.ctx.qname(node)
        if self.table.no_row(qn):
            self._cover(node)  # an enum value or a query: nor is its prefix a row
            return
        entry = self.table.reported_api(qn) if qn else None
        if not qn or entry is None or (entry is self.table.torch_ops and self._registered(qn)):
            return
        if entry.category == DATA_PARALLEL and self._type_tested(node):
            self._cover(node)
            return  # isinstance(m, nn.DataParallel): a test of the type, not a use
        if entry.action == "manual" and entry.key.rsplit(".", 1)[-1] in self._probed():
            entry = entry.probed()
        elif entry.action == "manual" and self._in_kept_guard():
            entry = entry.unreached()
        self.ctx.unsupported(self.ctx.lines(node), qn, entry)
        self._cover(node)

    def _type_tested(self, node: ast.expr) -> bool:
        """``node`` is the class operand of a type test: ``isinstance(x, node)`` /
        ``issubclass`` (also inside a tuple of classes), ``type(x) is node`` / ``==`` /
        ``in (node, ...)``."""
        parent = self.ctx.parent(node)
        while isinstance(parent, (ast.Tuple, ast.List)):
            node, parent = parent, self.ctx.parent(parent)
        if isinstance(parent, ast.Call):
            tests = isinstance(parent.func, ast.Name) and parent.func.id in TYPE_TESTS
            return tests and len(parent.args) == 2 and parent.args[1] is node
        return isinstance(parent, ast.Compare) and all(
            isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq, ast.In, ast.NotIn))
            for op in parent.ops
        )

    def _in_kept_guard(self) -> bool:
        """In the body of ``if torch.cuda.is_available():`` that stays on torch.cuda."""
        unit = self.ctx.unit
        return unit is not None and any(
            isinstance(a, ast.If)
            and self.ctx.is_claimed(a.test)
            and checks_available(list(ast.walk(a.test)), self.ctx.qname)
            for a in unit.ancestors
        )

    def _probed(self) -> set[str]:
        """Attributes tested by ``hasattr(x, "name")`` in the ifs around the current node."""
        unit = self.ctx.unit
        around = [*(unit.ancestors if unit else ()), *self.ctx.stack]
        return {
            name
            for node in around
            if isinstance(node, (ast.If, ast.IfExp))
            for name in hasattr_names(node.test)
        }

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._check_name(node)
        private = self.table.private_attributes.get(node.attr)
        if private is not None:  # storage._share_cuda_(): by its name, on any receiver
            self.ctx.unsupported(self.ctx.lines(node), "." + node.attr, private)

    def visit_Name(self, node: ast.Name) -> None:
        self._check_name(node)

    # -- calls: conditional APIs and third-party libraries -----------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        names = self.ctx.names_in(node.func)
        if not names:
            return
        if names[0] == "import_module" and node.args:  # importlib.import_module("x_cuda")
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                if self.ctx.qname(node.func) == IMPORT_MODULE:
                    entry = self._module(first.value)
                    if entry is not None:
                        self.ctx.unsupported(self.ctx.lines(node), first.value, entry)
            return
        may = self._may_call.get(names)
        if may is None:
            if len(self._may_call) >= CALLS_KEPT:
                self._may_call.clear()  # (a generated file calls 100,000 names)
            bound = self.ctx.import_bound.get(names[-1], "")
            may = self._may_call[names] = self.table.may_call_module(names, bound)
        if not may:
            return
        qn = self.ctx.qname(node.func) or ""
        if not qn or self.ctx.is_claimed(node.func):
            return
        entry = self.table.api(qn)
        if entry is not None and entry.when is not None:
            applies = self._applies(entry.when, node)
            if applies == CPP_ONLY:
                entry = dataclasses.replace(self.table.cpp_only_build, key=qn)
            if applies:
                self.ctx.unsupported(self.ctx.lines(node.func), qn, entry)
                return
        module_entry = self.table.module(qn)
        if module_entry is not None and names[-1] in self.optional_names:
            if checks_presence(self.ctx.source.data, names[-1]):
                module_entry = module_entry.optional()
        if module_entry is not None and id(node.func) not in self.covered:
            self.ctx.unsupported(self.ctx.lines(node.func), qn, module_entry)
            self.covered.add(id(node.func))
            self._cover(node.func)

    def _applies(self, when: str, node: ast.Call) -> bool | str:
        """Whether a call meets its entry's condition: a CUDA build, or no arguments;
        ``CPP_ONLY`` for a build given nvcc flags but only C/C++ sources."""
        if when == "no_args":
            return not node.args and not node.keywords
        return when == "cuda_sources" and self._cuda_build(node)

    def _cuda_build(self, node: ast.Call) -> bool | str:
        table = self.table
        flags = False
        for arg in source_args(node):
            if _false_or_none(arg.value):
                continue
            if arg.keyword in table.cuda_build_keywords:
                return True
            flags = flags or arg.keyword in table.cuda_flag_keywords
        if any(s.endswith(table.cuda_file_suffixes) for s in self.ctx.strings_in(node, False)):
            return True
        if not flags:
            return False
        sources = literal_sources(node) if self.ctx.last_name(node.func) == "load" else None
        if sources and all(s.endswith(table.cpp_suffixes) for s in sources):
            return CPP_ONLY
        return True

    # -- imports of third-party libraries ----------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias, lines in zip(node.names, self.ctx.alias_lines(node)):
            entry = self._module(alias.name)
            if entry is not None:
                bound = alias.asname or alias.name.split(".")[0]
                self._import_row(lines, alias.name, entry, bound)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:  # from . import _C: only the project's own extensions
            module = absolute_module(node.module or "", node.level, self.ctx.path)
            if not module or not self._extensions():
                return
        elif node.module is None:
            return
        else:
            module = node.module
        if node.names[0].name == "*":
            entry = self._module(module, bool(node.level))
            if entry is not None:
                self._import_row(self.ctx.lines(node), f"{module}.*", entry)
            return
        for alias, lines in zip(node.names, self.ctx.alias_lines(node)):
            name = f"{module}.{alias.name}"
            entry = self._module(name, bool(node.level))
            if entry is not None:
                self._import_row(lines, name, entry, alias.asname or alias.name)

    # -- environment variables ---------------------------------------------------------------
    def visit_SimpleString(self, part: StringPart) -> None:
        if part.docstring or self.ctx.import_depth or part.token.is_bytes:
            return
        if self.ctx.is_claimed(part.key):
            return  # an environment key rewritten by rule environment.ascend_variable
        body = part.token.body
        entry = self.table.env_name(body)
        if entry is not None:
            if not in_message(self.ctx, part.node) and not self._removed(part.node):
                self.ctx.unsupported(part.lines, body, entry)
            return
        assigned = self.table.env_assignments(body)
        if assigned and not in_message(self.ctx, part.node):
            for name, entry in assigned:
                self.ctx.unsupported(part.lines, name, entry, command_message(name))
        self._command_values(part.lines, body or "")

    def visit_FormattedString(self, node: ast.JoinedStr) -> None:
        if self.ctx.import_depth or self.ctx.is_docstring(node):
            return
        text = "".join(
            v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)
        )
        assigned = self.table.env_assignments(text)
        if assigned and not in_message(self.ctx, node):
            for name, entry in assigned:
                self.ctx.unsupported(self.ctx.lines(node), name, entry, command_message(name))
        self._command_values(self.ctx.lines(node), text)

    def visit_FormattedPart(self, part: StringPart) -> None:
        """An f-string joined to other strings (``f"CUDA_VISIBLE_DEVICES={i} " f"python
        ..."``): the variables its command sets, as for an f-string alone."""
        if part.docstring or self.ctx.import_depth:
            return
        assigned = self.table.env_assignments(part.token.body)
        if assigned and not in_message(self.ctx, part.node):
            for name, entry in assigned:
                self.ctx.unsupported(part.lines, name, entry, command_message(name))

    def _removed(self, node: ast.AST) -> bool:
        """A name in a list of variables the code removes (launch_values.removed_name)."""
        if self._removing is None and isinstance(self.ctx.parent(node), (ast.Tuple, ast.List)):
            self._removing = removing_loops(self.ctx.source.data)
        return removed_name(self.ctx, node, self._removing)

    def _command_values(self, where: tuple[int, int], text: str) -> None:
        """``"torchrun train.py --backend nccl"``: a value the command passes (one row)."""
        values = command_values(text)
        if values:
            entry = command_entry(values, self.table)
            self.ctx.unsupported(where, values[0], entry, launch_message(values))

    # -- device arguments still naming cuda after migration ---------------------------------
    def _foreign(self, func: ast.AST) -> bool:
        if self._foreign_call is None or self._foreign_call[0] is not func:
            self._foreign_call = (func, self.ctx.is_foreign(func))
        return self._foreign_call[1]

    def leave_Call(self, node: ast.Call) -> None:
        if self.ctx.is_claimed(node):
            return  # kept as it is on purpose (a capability probe's torch.device("cuda"))
        func = node.func
        is_to = isinstance(func, ast.Attribute) and func.attr == "to"
        is_device = self.ctx.last_name(func) == "device"
        self._library_specs(node)
        if not (is_to or is_device or any(kw.arg in DEVICE_KEYWORDS for kw in node.keywords)):
            return
        qn: str | None = None
        for i, arg in enumerate(source_args(node)):
            kw = arg.keyword
            if kw is None and i == 0 and not is_to and qn is None:
                qn = (self.ctx.qname(func) or "") if is_device else ""
            positional_device = kw is None and i == 0 and (is_to or qn in self.device_calls)
            if not (positional_device or kw in DEVICE_KEYWORDS):
                continue
            value = arg.value
            parent = arg.node if kw is not None else node
            if i == 0 and kw is None and self.ctx.inserted_before(value):
                continue  # torch.device(rank) became torch.device("npu", rank): "npu" is first
            strings = self.ctx.strings_in(value, updated=True)
            if kw == "map_location" and isinstance(value, ast.Dict):  # keys: the saved device
                strings = [
                    s
                    for k, v in zip(value.keys, value.values)
                    if k is not None
                    for s in self.ctx.strings_in(v, updated=True)
                ]
            if any("cuda" in s for s in strings) and not self._foreign(func):
                spec = isinstance(value, ast.Constant)  # written so, not built at run time
                self.ctx.unsupported(
                    self.ctx.lines(value),
                    self.ctx.snippet(value, parent),
                    LIBRARY_SPEC if spec else self.table.dynamic_device,
                )

    def _library_specs(self, node: ast.Call) -> None:
        """``RWKV(model=path, strategy="cuda fp16")``: the word cuda in a library's spec."""
        for keyword in node.keywords:
            if keyword.arg in SPEC_KEYWORDS and isinstance(keyword.value, ast.Constant):
                text = "".join(self.ctx.strings_in(keyword.value, updated=True))
                if CUDA_WORD.search(text):
                    snippet = self.ctx.snippet(keyword.value, keyword)
                    self.ctx.unsupported(self.ctx.lines(keyword.value), snippet, LIBRARY_SPEC)


def literal_sources(call: ast.Call) -> list[str] | None:
    """The file names of ``cpp_extension.load(name, sources, ...)`` when they are a literal
    list or tuple of strings (None when they are computed)."""
    value = call.args[1] if len(call.args) > 1 else None
    for kw in call.keywords:
        if kw.arg == "sources":
            value = kw.value
    elements = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
    names: list[str] = []
    for element in elements:
        if not (isinstance(element, ast.Constant) and isinstance(element.value, str)):
            return None
        names.append(element.value)
    return names


def _false_or_none(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value in (False, None)


def hasattr_names(test: ast.expr) -> list[str]:
    """The attribute names an if's test checks with ``hasattr(x, "name")``."""
    return [
        call.args[1].value
        for call in ast.walk(test)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "hasattr"
        and len(call.args) == 2
        and isinstance(call.args[1], ast.Constant)
        and isinstance(call.args[1].value, str)
    ]
