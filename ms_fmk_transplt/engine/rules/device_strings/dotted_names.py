"""Strings that name a torch.cuda API (rule device_strings.dotted_name): ``p.type() in
["torch.cuda.HalfTensor"]``, ``mock.patch("pkg.utils.torch.cuda.synchronize")``."""

from __future__ import annotations

import re

from ms_fmk_transplt.tables import Tables

CUDA_PREFIX = "torch.cuda."
# "torch.cuda.X", or a patch target through a module: "pkg.utils.torch.cuda.X"
_DOTTED = re.compile(r"^((?:[A-Za-z_][A-Za-z0-9_]*\.)*)(torch\.cuda(?:\.[A-Za-z_][A-Za-z0-9_]*)+)$")


def names_cuda_api(body: str) -> bool:
    """Cheap test: could this literal body be a dotted name of a torch.cuda API?"""
    return CUDA_PREFIX in body


def dotted_cuda_name(value: str, tables: Tables) -> str | None:
    """The torch.npu name a string naming a torch.cuda API becomes (None: leave it)."""
    match = _DOTTED.match(value)
    if match is None:
        return None
    prefix, name = match.groups()
    from ms_fmk_transplt.engine.rules.device_api.probe_shapes import PROBES

    if any(name == p or name.startswith(p + ".") for p in PROBES):  # kept on torch.cuda
        return None
    mapped = tables.lookup_cuda(name)
    return prefix + mapped[0] if mapped else None
