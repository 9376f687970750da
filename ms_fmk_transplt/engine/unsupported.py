"""What cannot run on the NPU as is (rules unsupported.<category>; rules/unsupported_api.json).

Nothing is rewritten here: each occurrence becomes a categorised notice with a tip, a row of
unsupported_op.xlsx. ``torch.cuda.X`` without an NPU counterpart is reported by device_api.py and
imports.py (rule device_api.no_npu_counterpart) with the tips of the same table.

* cuDNN/CUDA backend switches, ``torch.version.cuda``, ``DataParallel``, ``CUDAExtension`` ...:
  the outermost attribute chain whose qualified name is in the table (one row per use);
* ``cpp_extension.load``/``load_inline`` with CUDA sources; ``torch.ops.<namespace>`` of
  extensions;
* imports and calls of CUDA-only third-party libraries (flash_attn, xformers, apex.contrib, ...);
* literals naming CUDA/NCCL environment variables (``"CUDA_VISIBLE_DEVICES"``);
* device arguments that still mention cuda after migration (a device string built at run time).
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as matchers
from libcst.helpers import get_full_name_for_node

from ms_fmk_transplt.engine.base import Concern, literal_value, subtree
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.launch_values import command_message as launch_message
from ms_fmk_transplt.engine.launch_values import command_values
from ms_fmk_transplt.engine.spans.probe_shapes import checks_available
from ms_fmk_transplt.engine.spans.project_facts import project_op_namespaces
from ms_fmk_transplt.engine.spans.unsupported_spans import EXITS, command_message
from ms_fmk_transplt.tables.unsupported_table import (
    IMPORT_ERRORS,
    IMPORT_MODULE,
    Entry,
    checks_presence,
    registered_op_namespaces,
)


class Unsupported(Concern):
    def __init__(self, ctx: MigrationContext) -> None:
        super().__init__(ctx)
        self.table = self.tables.unsupported
        self.covered: set[int] = set()
        self.device_calls = self.tables.int_device.device_calls
        self.guarded = 0  # depth of try-statements that catch ImportError
        self.optional_names: set[str] = set()  # names bound by such (optional) imports
        self.probed: list[list[str]] = []  # per enclosing if: the names it tests with hasattr
        self.if_tests: list[cst.BaseExpression] = []  # the tests of the enclosing ifs
        # op namespaces the file, or another module of the project, registers in Python
        self.own_ops = registered_op_namespaces(ctx.source) | project_op_namespaces(ctx.options)
        # identifiers that can occur in a reported API: anything else needs no name resolution
        # (the last part of each entry; `when` entries are checked at their calls)

    def _registered(self, qualified: str) -> bool:
        return qualified.split(".")[2] in self.own_ops

    # -- `X if hasattr(dist, "X") else None`: the NPU's torch lacks X, the other branch runs --
    def visit_If(self, node: cst.If) -> None:
        self.probed.append(hasattr_names(node.test))
        self.if_tests.append(node.test)

    def leave_If(self, original: cst.If, updated: cst.If) -> cst.If:
        self.probed.pop()
        self.if_tests.pop()
        return updated

    def _in_kept_guard(self) -> bool:
        """In the body of ``if torch.cuda.is_available():`` that stays on torch.cuda (the
        capability concern claims the test while it is visited, before the body)."""
        return any(
            self.ctx.is_claimed(test) and checks_available(subtree(test), self.ctx.qname)
            for test in self.if_tests
        )

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.probed.append(hasattr_names(node.test))

    def leave_IfExp(self, original: cst.IfExp, updated: cst.IfExp) -> cst.IfExp:
        self.probed.pop()
        return updated

    # -- optional imports: `try: import flash_attn / except ImportError: ...` have a fallback --
    def visit_Try(self, node: cst.Try) -> None:
        self.guarded += _catches_import_error(node)

    def leave_Try(self, original: cst.Try, updated: cst.Try) -> cst.Try:
        self.guarded -= _catches_import_error(original)
        return updated

    def _import_row(self, node: cst.CSTNode, name: str, entry: Entry, bound: str = "") -> None:
        if self.guarded:
            entry = entry.optional()
            self.optional_names.add(bound)  # its calls have the same fallback
        self.ctx.unsupported(node, name, entry)

    def _cover(self, node: cst.CSTNode) -> None:
        cur = node
        while isinstance(cur, (cst.Attribute, cst.Call)):
            cur = cur.value if isinstance(cur, cst.Attribute) else cur.func
            self.covered.add(id(cur))

    # -- PyTorch APIs by qualified name ------------------------------------------------------
    def _check_name(self, node: cst.Attribute | cst.Name) -> None:
        if self.ctx.import_depth or id(node) in self.covered or self.ctx.is_claimed(node):
            self._cover(node)
            return
        names = self.ctx.names_in(node)
        if not self.table.may_name_api(
            names, self.ctx.import_bound.get(names[-1]) if names else None
        ):
            return
        qn = self.ctx.qname(node)
        entry = self.table.reported_api(qn) if qn else None
        if not qn or entry is None or (entry is self.table.torch_ops and self._registered(qn)):
            return
        if entry.action == "manual" and any(
            entry.key.rsplit(".", 1)[-1] in names for names in self.probed
        ):
            entry = entry.probed()
        elif entry.action == "manual" and self._in_kept_guard():
            entry = entry.unreached()
        self.ctx.unsupported(node, qn, entry)
        self._cover(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._check_name(node)
        private = self.table.private_attributes.get(node.attr.value)
        if private is not None:  # storage._share_cuda_(): by its name, on any receiver
            self.ctx.unsupported(node, "." + node.attr.value, private)

    def visit_Name(self, node: cst.Name) -> None:
        self._check_name(node)

    # -- calls: conditional APIs and third-party libraries -----------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        names = self.ctx.names_in(node.func)
        if not names:
            return
        if names[0] == "import_module" and node.args:  # importlib.import_module("x_cuda")
            self._imported_module(node, literal_value(node.args[0].value))
            return
        if not self.table.may_call_module(names, self.ctx.import_bound.get(names[-1], "")):
            return
        qn = self.ctx.qname(node.func) or ""
        if not qn or self.ctx.is_claimed(node.func):
            return
        entry = self.table.api(qn)
        if entry is not None and entry.when is not None and self._applies(entry.when, node):
            self.ctx.unsupported(node.func, qn, entry)
            return
        module_entry = self.table.module(qn)
        if module_entry is not None and names[-1] in self.optional_names:
            if checks_presence(self.ctx.source, names[-1]):
                module_entry = module_entry.optional()
        if module_entry is not None and id(node.func) not in self.covered:
            self.ctx.unsupported(node.func, qn, module_entry)
            self.covered.add(id(node.func))
            self._cover(node.func)

    def _imported_module(self, node: cst.Call, module: object) -> None:
        if not isinstance(module, str) or self.ctx.qname(node.func) != IMPORT_MODULE:
            return
        entry = self.table.module(module)
        if entry is not None:
            self.ctx.unsupported(node, module, entry)

    def _applies(self, when: str, node: cst.Call) -> bool:
        """Whether a call meets its entry's condition: a CUDA build, or no arguments."""
        if when == "no_args":
            return not node.args
        return when == "cuda_sources" and self._has_cuda_sources(node)

    def _has_cuda_sources(self, node: cst.Call) -> bool:
        for arg in node.args:
            keyword = arg.keyword.value if arg.keyword is not None else ""
            if keyword in self.table.cuda_build_keywords and not _false_or_none(arg.value):
                return True
        suffixes = self.table.cuda_file_suffixes
        for string in _strings(node):
            if string.endswith(suffixes):
                return True
        return False

    # -- imports of third-party libraries ----------------------------------------------------
    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = get_full_name_for_node(alias.name) or ""
            entry = self.table.module(name)
            if entry is not None:
                self._import_row(alias, name, entry, _bound(alias, name.split(".")[0]))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return
        module = get_full_name_for_node(node.module) or ""
        if isinstance(node.names, cst.ImportStar):
            entry = self.table.module(module)
            if entry is not None:
                self._import_row(node, f"{module}.*", entry)
            return
        for alias in node.names:
            if self.ctx.is_claimed(alias):
                continue
            name = f"{module}.{get_full_name_for_node(alias.name)}"
            entry = self.table.module(name)
            if entry is not None:
                self._import_row(alias, name, entry, _bound(alias, name.rsplit(".", 1)[-1]))

    # -- environment variables ---------------------------------------------------------------
    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if id(node) in self.ctx.docstrings or self.ctx.import_depth:
            return
        if self.ctx.is_claimed(node):
            return  # an environment key rewritten by engine/environment.py
        body = self.ctx.literal_body(node) or ""  # (a bytes literal names nothing)
        entry = self.table.env_name(body)
        if entry is not None:
            self.ctx.unsupported(node, body, entry)
            return
        for name, entry in self.table.env_assignments(body):
            self.ctx.unsupported(node, name, entry, command_message(name))
        self._command_values(node, body or "")

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        if self.ctx.import_depth:
            return
        text = "".join(p.value for p in node.parts if isinstance(p, cst.FormattedStringText))
        for name, entry in self.table.env_assignments(text):
            self.ctx.unsupported(node, name, entry, command_message(name))
        self._command_values(node, text)

    def _command_values(self, where: cst.CSTNode, text: str) -> None:
        """``"torchrun train.py --backend nccl"``: a value the command passes (one row)."""
        values = command_values(text)
        if values:
            entry = self.table.launch_config
            self.ctx.unsupported(where, values[0], entry, launch_message(values))

    # -- device arguments still naming cuda after migration ---------------------------------
    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if self.ctx.is_claimed(original):
            return updated  # kept as it is on purpose (a capability probe's torch.device("cuda"))
        func = original.func
        is_to = isinstance(func, cst.Attribute) and func.attr.value == "to"
        names = self.ctx.names_in(func)
        is_device = bool(names) and names[0] == "device"
        if not (
            is_to
            or is_device
            or any(
                a.keyword is not None and a.keyword.value in ("device", "map_location")
                for a in original.args
            )
        ):
            return updated
        if self.ctx.is_foreign(original.func):
            return updated
        qn = (self.ctx.qname(original.func) or "") if is_device else ""
        for i, (orig_arg, new_arg) in enumerate(zip(original.args, updated.args)):
            kw = orig_arg.keyword.value if orig_arg.keyword else None
            positional_device = kw is None and i == 0 and (is_to or qn in self.device_calls)
            if not (positional_device or kw in ("device", "map_location")):
                continue
            value = new_arg.value
            if kw == "map_location" and isinstance(value, cst.Dict):  # keys: the saved device
                value = cst.List(
                    [cst.Element(e.value) for e in value.elements if isinstance(e, cst.DictElement)]
                )
            if any("cuda" in s for s in _strings(value)):
                self.ctx.unsupported(
                    orig_arg.value, self.ctx.snippet(new_arg.value), self.table.dynamic_device
                )
        return updated


def _gives_up(handler: cst.ExceptHandler) -> bool:
    """A handler that re-raises or exits is no fallback (``except ImportError: raise ...``)."""
    body = handler.body
    last = body.body[-1] if body.body else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1]
    if isinstance(last, cst.Raise):
        return True
    return (
        isinstance(last, cst.Expr)
        and isinstance(last.value, cst.Call)
        and get_full_name_for_node(last.value.func) in EXITS
    )


def _bound(alias: cst.ImportAlias, default: str) -> str:
    """The name an import binds."""
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return default


def _catches_import_error(node: cst.Try) -> int:
    for handler in node.handlers:
        if _gives_up(handler):
            continue
        if handler.type is None:
            return 1
        names = (
            [handler.type]
            if not isinstance(handler.type, cst.Tuple)
            else [e.value for e in handler.type.elements]
        )
        for name in names:
            if get_full_name_for_node(name) in IMPORT_ERRORS:
                return 1
    return 0


def _strings(node: cst.CSTNode) -> list[str]:
    """Raw text of every string literal / f-string text part inside an expression."""
    found: list[str] = []

    class Collect(cst.CSTVisitor):
        def visit_SimpleString(self, n: cst.SimpleString) -> None:
            found.append(n.value)

        def visit_FormattedStringText(self, n: cst.FormattedStringText) -> None:
            found.append(n.value)

    node.visit(Collect())
    return [s.strip("'\"") for s in found]


def _false_or_none(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value in ("False", "None")


def hasattr_names(test: cst.BaseExpression) -> list[str]:
    """The attribute names an if's test checks with ``hasattr(x, "name")``."""
    names = []
    for call in matchers.findall(test, matchers.Call(func=matchers.Name("hasattr"))):
        assert isinstance(call, cst.Call)
        if len(call.args) == 2:
            value = literal_value(call.args[1].value)
            if isinstance(value, str):
                names.append(value)
    return names
