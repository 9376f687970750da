"""ms_fmk_transplt: migrate CUDA PyTorch training code to Ascend NPUs (torch_npu)."""

__version__ = "0.1.0"

#: torch_npu release line the migrated code targets (see README).
TARGET_TORCH_NPU = "2.x (torch_npu 2.1 and newer, on the matching PyTorch 2.x)"
