"""The row of a `torch.cuda` name the target's `torch.npu` lacks (recorded by the span concerns
through Recorder.no_npu_counterpart_at; data: the target's rules/torch_npu_names table)."""

from __future__ import annotations

from ms_fmk_transplt.rule_catalog import OPEN_WORK, declare

NO_NPU_COUNTERPART = declare(
    "device_api.no_npu_counterpart",
    "a `torch.cuda.X` the target's `torch.npu` lacks: left unchanged, one row",
    "torch_npu has no counterpart for some `torch.cuda` names (`nvtx`, `jiterator`, "
    "`get_arch_list`, ...; category `cuda_only_api`), and some exist only from a later torch_npu "
    "than the `-v` target (category `version_gap`, whose tip names the first version that has "
    "it). Rewriting them would fail with AttributeError on the NPU, so the code is left as it is "
    "and the row's tip says what to do instead.",
    kind=OPEN_WORK,
)
