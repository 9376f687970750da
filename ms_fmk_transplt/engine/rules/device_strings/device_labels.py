"""``"cuda"`` literals that are not torch devices: Lightning's accelerator (rule
device_strings.not_a_device, declared here: the concern reports it), and labels (part of rule
device_strings.literal), asked only of a literal the rule would rewrite, from where it stands on
the walk stack:

- a dict key, unless the dict is a table keyed by device type (every key a device name, or
  ``"default"``: ``{"cuda": torch.float16, "cpu": torch.float32}``, read by ``[device.type]``);
  ``{"enabled": True, "cpu": True, "cuda": True}`` is a config, its ``"cuda"`` an option;
- a lookup key (``cfg["cuda"]``, ``cfg.get/pop/setdefault("cuda")``, ``"cuda" in cfg`` where
  the file uses ``cfg`` as a mapping), unless the file binds that name to such a device table
  or looks it up by a device too (``cfg.get(device.type, cfg["cuda"])``);
- the argument of a custom pytest marker (``@pytest.mark.runs_on(["cuda"])``: a label its
  conftest compares); ``parametrize`` values, ``skipif`` and ``xfail`` conditions are devices;
- one side of a comparison whose other side is a value of a library that is not torch (the
  roots of ``foreign_cuda_roots`` in rules/interface_table.json: Triton's
  ``driver.active.get_current_target().backend == "cuda"``, triton-ascend says ``"npu"``),
  directly or through a name the file assigns such a value (one level);
- the value of an Enum member in a file that imports no torch (Triton's perf_analyzer
  ``SharedMemoryMode.CUDA = "cuda"``); in a file that imports torch it may be a device.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache

from ms_fmk_transplt.catalogue.rule_catalog import OPEN_WORK, declare
from ms_fmk_transplt.engine.rules.device_strings.device_consumers import (
    Key,
    dotted_path,
    import_paths,
    key,
)
from ms_fmk_transplt.engine.spans.npu_siblings import DEVICE_NAMES
from ms_fmk_transplt.engine.spans.shared_tree import tree_of
from ms_fmk_transplt.engine.spans.span_context import SpanContext
from ms_fmk_transplt.engine.tree_nodes import tree_nodes
from ms_fmk_transplt.tables.unsupported_table import Entry

NOT_A_DEVICE = declare(
    "device_strings.not_a_device",
    '`accelerator="cuda"` (Lightning): not a torch device, left unchanged, one manual row per file',
    "Some libraries take a `cuda` string that is not a torch device: Lightning's "
    '`Trainer(accelerator="cuda")` / `Fabric(accelerator="cuda")` names its CUDAAccelerator, and '
    'Lightning has no built-in "npu" accelerator, so rewriting the value would fail. The same '
    'holds where the value flows there through a name: `accelerator = "cuda"`, '
    '`accelerator == "cuda"`, a parameter `accelerator: Literal["cpu", "cuda"] = "cuda"`, '
    '`allowed_accelerators = {"cpu", "cuda"}` (any name containing `accelerator`). The literal '
    "is left as it is and reported, once per file with the lines of every use: run on the NPU "
    "through an NPU accelerator for Lightning, or drive torch_npu directly.",
    kind=OPEN_WORK,
)
NOT_DEVICE_KEYWORDS = frozenset({"accelerator"})  # keyword arguments whose "cuda" is no device
ACCELERATOR_API = 'accelerator "cuda"'
ACCELERATOR = '"cuda" flows into a Lightning accelerator (by name): not a device; left unchanged'
NOT_A_DEVICE_ENTRY = Entry(
    "accelerator",
    "cuda_only_api",
    "manual",
    'Lightning\'s accelerator="cuda" selects its CUDAAccelerator (there is no built-in "npu" '
    "accelerator): use an NPU accelerator for Lightning, or torch_npu directly",
)

LOOKUPS = frozenset({"get", "pop", "setdefault"})
MARKER_VALUES = frozenset({"parametrize", "skipif", "xfail"})  # their arguments are devices


def device_table(node: ast.Dict) -> bool:
    """A dict display keyed by device type: every key a device name (``"cuda"``, ``"cpu"``,
    ``"cuda:0"``) or its fallback ``"default"`` (diffusers' ``BACKEND_EMPTY_CACHE``)."""
    keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
    if len(keys) != len(node.keys) or not all(isinstance(k, str) for k in keys):
        return False
    names = {str(k).split(":")[0] for k in keys} - {"default"}
    return bool(names) and DEVICE_NAMES.issuperset(names)


def _name(node: ast.AST) -> str | None:
    """``cfg``, ``self.cfg``: the dotted name of a receiver (None for anything else)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def _device_key(node: ast.AST) -> bool:
    """A key that holds a device: ``device.type``, ``device_type``, ``args.device``, ``dev``."""
    if isinstance(node, ast.Attribute) and node.attr == "type":
        return True
    last = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return isinstance(last, str) and ("device" in last.lower() or last in ("dev", "dev_type"))


@dataclass(frozen=True)
class LookupFacts:
    """What the whole file says of the names its ``"cuda"`` lookups read."""

    device_tables: frozenset[str]  # bound to a device-table dict, or looked up by a device
    mappings: frozenset[str]  # looked up by a literal key, or bound to a dict
    foreign: frozenset[Key]  # names assigned a value of a library that is not torch


def _lookup(node: ast.AST) -> tuple[ast.AST, ast.AST] | None:
    """(receiver, key) of ``r[k]`` / ``r.get(k, ...)`` / ``r.pop(k)`` / ``r.setdefault(k)``."""
    if isinstance(node, ast.Subscript):
        return node.value, node.slice
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
        if node.func.attr in LOOKUPS:
            return node.func.value, node.args[0]
    return None


@lru_cache(maxsize=8)
def lookup_facts(source: bytes, foreign_roots: frozenset[str]) -> LookupFacts:
    try:
        tree = tree_of(source)
    except (SyntaxError, ValueError):
        return LookupFacts(frozenset(), frozenset(), frozenset())
    tables: set[str] = set()
    mappings: set[str] = set()
    foreign: set[Key] = set()
    imports = import_paths(tree)
    for node in tree_nodes(tree):
        if isinstance(node, ast.Assign):
            names = [n for n in map(_name, node.targets) if n is not None]
            if isinstance(node.value, ast.Dict):
                mappings.update(names)
                if device_table(node.value):
                    tables.update(names)
            root = dotted_path(_chain_root(node.value), imports) if names else None
            if root is not None and root.split(".")[0] in foreign_roots:
                foreign.update(key(t) for t in node.targets if isinstance(t, ast.Name))
        found = _lookup(node)
        if found is not None:
            name = _name(found[0])
            if name is not None and isinstance(found[1], ast.Constant):
                mappings.add(name)
            elif name is not None and _device_key(found[1]):
                tables.add(name)
    return LookupFacts(frozenset(tables), frozenset(mappings), frozenset(foreign))


def _chain_root(node: ast.AST) -> ast.AST:
    """The dotted name a chain of attributes, calls and subscripts starts with
    (``triton.runtime.driver.active.get_current_target().backend`` -> ``triton.runtime...
    get_current_target``)."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Attribute) and isinstance(node.value, (ast.Call, ast.Subscript)):
            node = node.value
        else:
            return node


def _base(node: ast.AST) -> ast.AST:
    """The name a chain of attributes, calls and subscripts reads (``target`` of
    ``target.backend``)."""
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


class DeviceLabels:
    """Asked by the device_strings concern about a ``"cuda"`` literal it would rewrite."""

    def __init__(self, ctx: SpanContext) -> None:
        self.ctx = ctx
        self._imports_foreign: bool | None = None

    def facts(self) -> LookupFacts:
        return lookup_facts(self.ctx.source.data, self.ctx.tables.foreign_roots)

    def is_label(self, node: ast.Constant) -> bool:
        stack = self.ctx.stack
        parent = stack[-1] if stack else None
        if isinstance(parent, ast.Dict):
            return any(k is node for k in parent.keys) and not device_table(parent)
        if isinstance(parent, ast.Compare):
            return self._compared(parent, node)
        found = _lookup(parent) if parent is not None else None
        if found is not None and found[1] is node:
            return self._kept_lookup(found[0], False)
        if isinstance(parent, ast.Assign) and parent.value is node:
            return self._enum_member(self.ctx.parent(parent))
        return self._marker_argument(node)

    def _enum_member(self, owner: ast.AST | None) -> bool:
        """The value of a member of an Enum class, in a file that imports no torch (Triton's
        ``SharedMemoryMode.CUDA = "cuda"``: a mode of perf_analyzer, no torch device)."""
        if not isinstance(owner, ast.ClassDef):
            return False
        bases = [
            b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in owner.bases
        ]
        if not any(base.endswith("Enum") for base in bases):
            return False
        paths = self.ctx.import_bound_anywhere.values()
        return not any(p.split(".")[0] == "torch" for p in paths)

    def _kept_lookup(self, receiver: ast.AST, membership: bool) -> bool:
        """Whether a literal key of ``receiver`` stays (``cfg["cuda"]``, ``"cuda" in cfg``)."""
        if isinstance(receiver, ast.Dict):
            return not device_table(receiver)
        name = _name(receiver)
        if name is None:
            return not membership
        facts = self.facts()
        if name in facts.device_tables:
            return False
        return not membership or name in facts.mappings

    def _compared(self, compare: ast.Compare, node: ast.Constant) -> bool:
        if compare.left is node and isinstance(compare.ops[0], (ast.In, ast.NotIn)):
            return self._kept_lookup(compare.comparators[0], True)
        for side in (compare.left, *compare.comparators):
            if side is node or isinstance(side, ast.Constant):
                continue
            base = _base(side)  # target.backend, with target = ...get_current_target()
            if self.ctx.is_foreign(side) or (isinstance(base, ast.Name) and self._foreign(base)):
                return True
        return False

    def _foreign(self, name: ast.Name) -> bool:
        """A name whose every binding the read sees is assigned a value of a foreign library."""
        if self._imports_foreign is None:
            roots = self.ctx.tables.foreign_roots
            paths = self.ctx.import_bound_anywhere.values()
            self._imports_foreign = any(p.split(".")[0] in roots for p in paths)
        foreign = self.facts().foreign if self._imports_foreign else frozenset()
        if not foreign:
            return False
        bindings = self.ctx.scopes.bindings_read(name, self.ctx.scope_of(name))
        nodes = [b.node for b in bindings]
        return bool(nodes) and all(n is not None and key(n) in foreign for n in nodes)

    def _marker_argument(self, node: ast.Constant) -> bool:
        """An argument of ``pytest.mark.<custom>(...)``, directly or in a list / tuple."""
        stack = self.ctx.stack
        child: ast.AST = node
        for parent in reversed(stack[-4:]):
            if isinstance(parent, (ast.List, ast.Tuple, ast.Set, ast.keyword)):
                child = parent
                continue
            if not isinstance(parent, ast.Call) or child is parent.func:
                return False
            func = parent.func
            if not isinstance(func, ast.Attribute) or func.attr in MARKER_VALUES:
                return False
            if self.ctx.names_in(func)[1:2] != ("mark",):
                return False
            return (self.ctx.qname(func) or "").startswith("pytest.mark.")
        return False
