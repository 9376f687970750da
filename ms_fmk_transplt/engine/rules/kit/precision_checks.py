"""What makes the GPU and NPU steps of the precision kit differ from step 0, whatever the seed:
random numbers drawn on the device (the GPU's and the NPU's generators are not the same, so a
mask made with ``torch.rand(..., device=x.device)`` or ``torch.rand_like(x)`` in a forward
differs), and random augmentation or regularisation left on (mixup / cutmix, drop-path:
timm's ``Mixup(...)``, ``mixup_alpha``, ``drop_path_rate``). msprobe's ``seed_all`` seeds both
sides and sets ``F.dropout``'s p to 0; it cannot make the two devices draw the same numbers.

Read from each file MAIN runs (MAIN, the loop's file and the project's modules they import,
from the program model's import graph); each finding is a ``kit.precondition`` WARNING at its
line (the input's), on the terminal and in KIT_README.md.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ms_fmk_transplt.engine.scope_model import full_name

# torch functions drawing random numbers: on the device of their ``device=`` argument
_DRAWS = ("rand", "randn", "randint", "randperm", "normal", "bernoulli")
# drawing on the device of their input tensor: a forward's tensors are on the device
_LIKE = (
    "rand_like",
    "randn_like",
    "randint_like",
    "bernoulli",
    "multinomial",
    "poisson",
    "dropout",
    "alpha_dropout",
    "feature_alpha_dropout",
)
# F.dropout, F.dropout2d, F.dropout3d: seed_all(rm_dropout=True) sets their p to 0
_ZEROED = ("dropout", "dropout2d", "dropout3d")
_IN_PLACE = ("bernoulli_", "uniform_", "normal_", "exponential_", "random_", "geometric_")
_MIXUP_CALLS = ("Mixup", "FastCollateMixup")
# keywords and assigned names (any case) that turn an augmentation or drop-path on
_ON = {
    "mixup": "mixup",
    "mixup_alpha": "mixup",
    "cutmix": "cutmix",
    "cutmix_alpha": "cutmix",
    "drop_path_rate": "drop-path",
    "drop_path": "drop-path",
}
# a block's own rate (``drop_path=dpr[i]``, ``self.drop_path = DropPath(...)``): only a number
_NUMBER_ONLY = ("drop_path",)
_DEVICE = (
    "{name}: random numbers drawn on the device ({how}): the GPU's and the NPU's generators "
    "differ, so the two steps differ from step 0; draw them on the CPU and move them "
    "(torch.rand(..., device='cpu').to(x.device)) on both sides"
)
_AUGMENT = "{what} is on ({name}): the two sides draw different samples; turn it off on both"


def random_findings(tree: ast.Module) -> list[tuple[int, str, str]]:
    """(line, name, warning) of each device draw and each augmentation left on, by line."""
    found = {line: (name, message) for line, name, message in _findings(tree)}
    return [(line, *found[line]) for line in sorted(found)]


def _findings(tree: ast.Module) -> Iterator[tuple[int, str, str]]:
    for function, node in _walk(tree, None):
        if isinstance(node, ast.Call):
            yield from _call(node, function == "forward")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            yield from _assigned(node)


def _walk(node: ast.AST, function: str | None) -> Iterator[tuple[str | None, ast.AST]]:
    """Each node with the name of the function it is in."""
    for child in ast.iter_child_nodes(node):
        inner = function
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = child.name
        yield inner, child
        yield from _walk(child, inner)


def _call(node: ast.Call, forward: bool) -> Iterator[tuple[int, str, str]]:
    name = full_name(node.func) or ""
    torch_call = name.startswith(("torch.", "th.", "F.", "nn.functional."))
    last = name.rsplit(".", 1)[-1]
    device = next((k.value for k in node.keywords if k.arg == "device"), None)
    if torch_call and last in _DRAWS and device is not None and not _cpu(device):
        how = f"device={ast.unparse(device)}"
        yield node.lineno, name, _DEVICE.format(name=name, how=how)
    elif forward and torch_call and last in _LIKE and not _zeroed(name):
        yield node.lineno, name, _DEVICE.format(name=name, how="in forward, on its input's")
    elif forward and isinstance(node.func, ast.Attribute) and last in _IN_PLACE:
        yield node.lineno, name, _DEVICE.format(name=name, how="in forward, in place")
    if last in _MIXUP_CALLS and not _all_off(node):
        yield node.lineno, name, _AUGMENT.format(what="mixup / cutmix", name=f"{name}(...)")
        return
    for keyword in node.keywords:
        arg = (keyword.arg or "").lower()
        what = _ON.get(arg)
        if what and _on(keyword.value, arg in _NUMBER_ONLY):
            text = f"{keyword.arg}={ast.unparse(keyword.value)}"
            yield node.lineno, text, _AUGMENT.format(what=what, name=text)


def _zeroed(name: str) -> bool:
    """``F.dropout(x, p)``, ``torch.nn.functional.dropout(...)``: msprobe's seed_all sets p to 0
    (``torch.dropout`` is left as it is)."""
    module, _, last = name.rpartition(".")
    return last in _ZEROED and (module == "F" or module.endswith("functional"))


def _assigned(node: ast.Assign | ast.AnnAssign) -> Iterator[tuple[int, str, str]]:
    """``_C.MODEL.DROP_PATH_RATE = 0.1``, ``mixup_alpha = 0.8``: a config's value."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        name = full_name(target) or ""
        what = _ON.get(name.rsplit(".", 1)[-1].lower())
        if what and node.value is not None and _on(node.value, number_only=True):
            text = f"{name} = {ast.unparse(node.value)}"
            yield node.lineno, text, _AUGMENT.format(what=what, name=text)


def _cpu(value: ast.expr) -> bool:
    """``"cpu"``, ``torch.device("cpu")``."""
    if isinstance(value, ast.Call) and value.args:
        value = value.args[0]
    return isinstance(value, ast.Constant) and str(value.value).startswith("cpu")


def _on(value: ast.expr, number_only: bool = False) -> bool:
    """A value that turns it on: a number other than 0, True; a name or an expression (maybe
    on), unless ``number_only``."""
    if isinstance(value, ast.Constant):
        return value.value not in (0, 0.0, False, None) and not isinstance(value.value, str)
    return not number_only and not isinstance(value, (ast.List, ast.Tuple, ast.Dict))


def _all_off(node: ast.Call) -> bool:
    """``Mixup(mixup_alpha=0., cutmix_alpha=0.)``: both given as zero."""
    given = {k.arg: k.value for k in node.keywords if k.arg in ("mixup_alpha", "cutmix_alpha")}
    return len(given) == 2 and not any(_on(v) for v in given.values())
