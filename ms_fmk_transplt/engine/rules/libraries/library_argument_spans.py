"""Span pass: call arguments of a device-neutral library that select a CUDA-only path
(``from_pretrained(..., attn_implementation="flash_attention_2")``, ``load_in_4bit=True``,
``TrainingArguments(tf32=True)``, Lightning's ``Trainer(gpus=2)``): a row each, folded with the
library's other rows of the file (library_rows.py). A listed string that is a side of a
comparison (``if args.optim == "adamw_bnb_8bit":``) tests the user's choice: no row. An argument
whose entry lists ``subclasses`` applies to the calls of subclasses too: trl's
``SFTConfig(optim=...)`` (a class of a listed package) and a class of the file deriving from a
listed call, directly or through other classes of the file (``class Args(TrainingArguments)``;
a base imported from another file of the project is not followed). A dict display holding such a
setting by its name is a recipe written in Python (axolotl's ``DictDefault({"optimizer":
"adamw_bnb_8bit"})``, trl's ``model_init_kwargs={"attn_implementation": "<org>/<kernel>"}``):
a row as a recipe file gets (library_configs.py), the optimizer names whatever the file imports
(the recipe is handed to a trainer elsewhere), an argument of any call of a library when the file
uses it."""

from __future__ import annotations

import ast

from ms_fmk_transplt.engine.rules.libraries.library_configs import (
    OPTIMIZER_KEYS,
    optimizer_names,
    setting_arguments,
    setting_entry,
)
from ms_fmk_transplt.engine.spans.shared_tree import tree_of
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern
from ms_fmk_transplt.engine.spans.span_context import SpanContext, StringPart
from ms_fmk_transplt.tables.library_table import Argument
from ms_fmk_transplt.tables.unsupported_table import Entry

_UNSET = object()


class LibraryArgumentSpans(SpanConcern):
    def __init__(self, ctx: SpanContext) -> None:
        super().__init__(ctx)
        self.arguments = self.tables.unsupported.libraries.arguments
        self.strings = self.tables.unsupported.libraries.strings
        self._roots: frozenset[str] | None = None
        self._bases: dict[str, list[str]] | None = None  # a class of the file: its bases
        self._names: dict[str, Entry] | None = None  # optimizer names (library_configs.py)
        self._settings: dict[str, list[tuple[str, Argument]]] | None = None

    def _imported_roots(self) -> frozenset[str]:
        """The top-level modules the file imports from."""
        if self._roots is None:
            paths = self.ctx.import_bound.values()
            self._roots = frozenset(p.split(".", 1)[0] for p in paths)
        return self._roots

    def visit_SimpleString(self, part: StringPart) -> None:
        """``attn_implementation = "flash_attention_2"`` (held for a later call, a default, a
        flag value), Ray's ``{"GPU": 1}`` bundles: the value a library reads."""
        if part.docstring or not isinstance(part.value, str):
            return
        parent = self.ctx.stack[-1] if self.ctx.stack else None
        if isinstance(parent, ast.Dict) and part.whole and self._dict_setting(part, parent):
            return
        found = self.strings.get(part.value)
        if found is None:
            return
        if isinstance(parent, ast.keyword) and parent.arg in self.arguments:
            return  # attn_implementation="flash_attention_2": the argument's row
        if self._compared():
            return  # args.optim == "adamw_bnb_8bit": a test of the user's choice, not a value
        if found.dict_key and not (isinstance(parent, ast.Dict) and part.node in parent.keys):
            return
        library = self.tables.unsupported.libraries.by_name[found.library]
        if not set(library.roots) & self._imported_roots():
            return
        api = f"{library.roots[0]}: {found.value!r}"
        entry = Entry(api, "third_party", found.action, found.tip)
        self.ctx.unsupported(part.lines, api, entry)

    def _dict_setting(self, part: StringPart, parent: ast.Dict) -> bool:
        """``{"optimizer": "adamw_bnb_8bit"}``, ``{"attn_implementation": "<org>/<kernel>"}``: a
        value of a dict display under a setting's name; reported, True."""
        index = next((i for i, v in enumerate(parent.values) if v is part.node), None)
        key = None if index is None else parent.keys[index]
        value = part.value
        if not isinstance(key, ast.Constant) or not isinstance(key.value, str):
            return False
        if not isinstance(value, str):
            return False
        table = self.tables.unsupported
        entry = None
        if key.value in OPTIMIZER_KEYS:
            self._names = self._names if self._names is not None else optimizer_names(table)
            entry = self._names.get(value)
        if entry is None:
            if self._settings is None:
                self._settings = setting_arguments(table)
            entry = setting_entry(key.value, value, self._settings)
            if entry is None or entry.key.split(":", 1)[0] not in self._imported_roots():
                return False
        self.ctx.unsupported(part.lines, entry.key, entry)
        return True

    def _compared(self) -> bool:
        """The string is a side of a comparison (``optim in ("adamw_8bit", ...)``): code that
        tests which value the user chose (the library is used, and reported, where it is)."""
        for node in reversed(self.ctx.stack):
            if isinstance(node, ast.Compare):
                return True
            if not isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                return False
        return False

    def _classes(self) -> dict[str, list[str]]:
        """The classes the file defines: the names of their bases, through its imports."""
        if self._bases is None:
            bound = self.ctx.import_bound
            self._bases = {}
            for node in ast.walk(tree_of(self.ctx.source.data)):
                if isinstance(node, ast.ClassDef):
                    names = [list(reversed(self.ctx.names_in(b))) for b in node.bases]
                    self._bases[node.name] = [
                        ".".join([bound.get(n[0], n[0]), *n[1:]]) for n in names if n
                    ]
        return self._bases

    def _derives(self, name: str, argument: Argument, seen: frozenset[str] = frozenset()) -> bool:
        """Whether the class ``name`` (a qualified name, or a class of the file) derives from
        one of the argument's calls of its library, or is a class of a listed package."""
        library = self.tables.unsupported.libraries.by_name[argument.library]
        root, _, _ = name.partition(".")
        if root in (argument.subclasses or ()):
            return True
        leaf = name.rsplit(".", 1)[-1]
        if root in library.roots and leaf in argument.calls:
            return True
        classes = self._classes()
        if name not in classes or name in seen:
            return False
        return any(self._derives(b, argument, seen | {name}) for b in classes[name])

    def visit_Call(self, node: ast.Call) -> None:
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in self.arguments:
                continue
            value = _constant(kw.value)
            for argument in self.arguments[kw.arg]:
                if self._applies(argument, node, value):
                    self._report(argument, node, kw, value)
                    break

    def _applies(self, argument: Argument, node: ast.Call, value: object) -> bool:
        library = self.tables.unsupported.libraries.by_name[argument.library]
        if argument.calls:
            names = self.ctx.names_in(node.func)
            if argument.subclasses is not None and names and names[0] not in argument.calls:
                qualified = self.ctx.qname(node.func) or ".".join(reversed(names))
                return self._derives(qualified, argument) and self._value_applies(argument, value)
            if not names or names[0] not in argument.calls:  # the last identifier first
                return False
            qualified = self.ctx.qname(node.func) or ""
            if qualified.split(".", 1)[0] not in library.roots and not (
                argument.in_file and set(library.roots) & self._imported_roots()
            ):
                return False
        elif not library.roots or not set(library.roots) & self._imported_roots():
            return False
        return self._value_applies(argument, value)

    @staticmethod
    def _value_applies(argument: Argument, value: object) -> bool:
        if value is _UNSET:  # not a constant: reported when the argument is a switch
            return not argument.values and not argument.pattern
        return argument.matches(value)

    def _report(self, argument: Argument, node: ast.Call, kw: ast.keyword, value: object) -> None:
        library = self.tables.unsupported.libraries.by_name[argument.library]
        shown = "..." if value is _UNSET else repr(value)
        api = f"{library.roots[0]}: {kw.arg}={shown}"
        entry = Entry(api, "third_party", argument.action, argument.tip)
        self.ctx.unsupported(self.ctx.lines(kw), api, entry)


def _constant(value: ast.expr) -> object:
    return value.value if isinstance(value, ast.Constant) else _UNSET
