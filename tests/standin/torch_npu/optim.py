"""TEST DOUBLE of torch_npu.optim (loaded by ``import torch_npu``, as the real package's
``__init__`` loads its optim module): the fused optimizers migrated code names, as torch's own
CPU optimizers with the same update rule and constructor arguments."""

from __future__ import annotations

import torch


class NpuFusedAdamW(torch.optim.AdamW):
    """torch_npu's fused AdamW: on the stand-in, torch's AdamW."""


class NpuFusedAdam(torch.optim.Adam):
    """torch_npu's fused Adam: on the stand-in, torch's Adam."""


class NpuFusedSGD(torch.optim.SGD):
    """torch_npu's fused SGD: on the stand-in, torch's SGD."""
