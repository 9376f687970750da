"""ms_fmk_transplt: migrate CUDA PyTorch training code to Ascend NPUs (torch_npu)."""

__version__ = "0.1.0"
