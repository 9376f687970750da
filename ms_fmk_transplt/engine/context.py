"""Per-file state shared by the concerns of a LibCST stage (-r, -sim, distributed -m: see
engine/stages.py): name resolution and event recording."""

from __future__ import annotations

from typing import Any

import libcst as cst
from libcst._metadata_dependent import LazyValue
from libcst.helpers import get_full_name_for_node, get_full_name_for_node_or_raise
from libcst.metadata import (
    MetadataWrapper,
    PositionProvider,
    QualifiedNameProvider,
    QualifiedNameSource,
)

from ms_fmk_transplt.engine.cst_names import CstNames
from ms_fmk_transplt.engine.options import EngineOptions
from ms_fmk_transplt.engine.recorder import Recorder, snippet_of
from ms_fmk_transplt.engine.scope_model import IMPORT, LOCAL, chosen_name
from ms_fmk_transplt.tables import Tables


class MigrationContext(Recorder):
    """Everything a concern needs while its LibCST stage runs over one file."""

    def __init__(
        self,
        path: str,
        module: cst.Module,
        tables: Tables,
        options: EngineOptions | None = None,
        source: bytes | None = None,
    ) -> None:
        super().__init__(path, tables, options)
        self.module = module
        # the code the module was parsed from (concerns test it for words before walking)
        self.source = module.bytes if source is None else source
        # ids of string nodes that are docstrings or bare string statements: never rewritten.
        self.docstrings: set[int] = set()
        self.import_depth = 0
        self._names: CstNames | None = None
        self._wrapper: MetadataWrapper | None = None
        self._import_bound: dict[str, str] | None = None
        self._module_bound: frozenset[str] | None = None
        self._resolved: dict[Any, Any] = {}
        self.claimed: list[cst.CSTNode] = []  # exclusive claims, for the stages after this one

    def claim(self, node: object, rule: str | None = None) -> None:
        super().claim(node, rule)
        if rule is None and isinstance(node, cst.CSTNode):
            self.claimed.append(node)

    def bind(self, wrapper: MetadataWrapper) -> None:
        self._wrapper = wrapper

    def _get_metadata(self, provider: Any, node: cst.CSTNode) -> Any:
        """Metadata of an original node; each provider is computed on first use only (a file
        in which nothing asks never pays for scopes, qualified names or positions)."""
        mapping = self._resolved.get(provider)
        if mapping is None:
            assert self._wrapper is not None
            mapping = self._resolved[provider] = self._wrapper.resolve(provider)
        value = mapping[node]
        return value() if isinstance(value, LazyValue) else value

    def metadata(self, provider: Any, node: cst.CSTNode) -> Any:
        return self._get_metadata(provider, node)

    def use_names(self, names: CstNames) -> None:
        """Resolve names with engine/scopes.py (on the stdlib tree of the same code) instead of
        LibCST's scope and qualified-name providers, which cost most of a LibCST traversal."""
        self._names = names

    def _qualified_names(self, node: cst.CSTNode) -> set[tuple[str, int]]:
        try:
            if self._names is not None:
                pos = self._get_metadata(PositionProvider, node)
                place = (type(node).__name__, pos.start.line, pos.start.column)
                return self._names.qualified_names((*place, pos.end.line, pos.end.column))
            found = self._get_metadata(QualifiedNameProvider, node)
        except KeyError:  # a node made by this pass: nothing is known of it
            return set()
        return {
            (q.name, IMPORT if q.source == QualifiedNameSource.IMPORT else LOCAL) for q in found
        }

    # -- name resolution -------------------------------------------------------------------
    def qname(self, node: cst.CSTNode) -> str | None:
        """The fully qualified name an expression refers to, resolved through imports.

        ``th.cuda.synchronize`` after ``import torch as th`` gives ``torch.cuda.synchronize``;
        a local variable gives its local name; an unresolvable ``torch.x`` (no import in the
        file, e.g. a snippet) is taken literally. Returns None when nothing is known.
        """
        names = self._qualified_names(node)
        if not names and self.import_depth:
            return None
        literal = isinstance(node, (cst.Name, cst.Attribute))
        return chosen_name(names, get_full_name_for_node(node) if literal else None)

    @property
    def import_bound(self) -> dict[str, str]:
        """Names bound by import statements anywhere in the file -> what they import (cheap
        textual scan, computed once; used to decide when real name resolution is worth it)."""
        if self._import_bound is None:
            bound: dict[str, str] = {}

            class Collect(cst.CSTVisitor):
                def visit_Import(self, node: cst.Import) -> None:
                    for a in node.names:
                        full = get_full_name_for_node(a.name) or ""
                        if a.asname:  # `import a.b as c` binds c (an import's asname is a Name)
                            bound[get_full_name_for_node_or_raise(a.asname.name)] = full
                        else:
                            bound[full.split(".")[0]] = full

                def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
                    if node.module is None or isinstance(node.names, cst.ImportStar):
                        return
                    module = get_full_name_for_node(node.module) or ""
                    for a in node.names:
                        leaf = get_full_name_for_node(a.name) or ""
                        name = get_full_name_for_node(a.asname.name) if a.asname else leaf
                        bound[name or leaf] = f"{module}.{leaf}"

            self.module.visit(Collect())
            self._import_bound = bound
        return self._import_bound

    @property
    def module_bound(self) -> frozenset[str]:
        """Names bound by module-level import statements (`import torch.nn` binds `torch`)."""
        if self._module_bound is None:
            bound: set[str] = set()
            for stmt in self.module.body:
                for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
                    if isinstance(small, cst.Import):
                        for a in small.names:
                            name = a.asname.name if a.asname else a.name
                            bound.add((get_full_name_for_node(name) or "").split(".")[0])
                    elif isinstance(small, cst.ImportFrom) and not isinstance(
                        small.names, cst.ImportStar
                    ):
                        for a in small.names:
                            name = a.asname.name if a.asname else a.name
                            bound.add(get_full_name_for_node_or_raise(name))
            self._module_bound = frozenset(bound)
        return self._module_bound

    # -- positions and text ----------------------------------------------------------------
    def lines(self, node: cst.CSTNode) -> tuple[int, int]:
        pos = self._get_metadata(PositionProvider, node)
        return pos.start.line, pos.end.line

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def snippet(self, node: cst.CSTNode) -> str:
        """One-line, bounded rendering of a node for the Before/After columns."""
        return snippet_of(self.code(node))

    # -- recording (engine/recorder.py: record, warn, unsupported at ``self.lines(node)``) ---

    # -- string literals -------------------------------------------------------------------
    @staticmethod
    def literal_body(node: cst.SimpleString) -> str | None:
        """The raw text between the quotes, or None for bytes literals."""
        if "b" in node.prefix.lower():
            return None
        start = len(node.prefix) + len(node.quote)
        return node.value[start : len(node.value) - len(node.quote)]

    @staticmethod
    def with_literal_body(node: cst.SimpleString, body: str) -> cst.SimpleString:
        return node.with_changes(value=f"{node.prefix}{node.quote}{body}{node.quote}")
