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

from ms_fmk_transplt.engine.spans.shared_tree import analysable_tree

_OPTIONS = re.compile(r"^(?:\w+_)?(?:args|cfg|config|opts?|options|hparams|flags)$")
# a test of the device, or of the launch (how many processes: a distributed run is the run the
# NPU cluster is for, not an option to leave off)
_DEVICE = re.compile(r"cuda|device|is_available|gpu|rank|world_size|distributed", re.I)
_MAX_TEST = 60  # characters of the test shown in the tip

Choice = tuple[int, int, str]  # first and last line of the body, the test as written


def option_choices(source: bytes) -> list[Choice]:
    """The bodies of the ``if`` statements of ``source`` that run on the user's choice."""
    tree = analysable_tree(source)
    if tree is None:
        return []
    text = source.decode("utf-8", "replace")
    found: list[Choice] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and node.body and _chooses(node.test):
            shown = ast.get_source_segment(text, node.test) or ""
            shown = " ".join(shown.split())
            if len(shown) > _MAX_TEST:
                shown = shown[: _MAX_TEST - 3] + "..."
            last = node.body[-1]
            found.append((node.body[0].lineno, last.end_lineno or last.lineno, shown))
    return found


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
