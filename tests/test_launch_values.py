"""Launch scripts and config files that turn TF32 on (rule unsupported.launch_config): one row
per file naming the settings; turned off or commented out, no row."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.unsupported.launch_values import TF32_TIP, file_notice
from ms_fmk_transplt.tables import load_tables

SCRIPT = b"""#!/bin/bash
# --tf32 True (a comment: not a setting)
torchrun --nproc_per_node 8 train.py \\
    --bf16 True \\
    --tf32 True \\
    --output_dir out
python eval.py --tf32 False --fp16
python export.py --tf32
"""


def test_script_flags_turning_tf32_on() -> None:
    notice = file_notice("run.sh", SCRIPT, ".sh", load_tables().unsupported)
    assert notice is not None
    assert notice.api == "--tf32 True (line 5), --tf32 (line 8)"
    assert (notice.category, notice.action, notice.tip) == ("launch_config", "manual", TF32_TIP)
    assert notice.message.startswith("2 setting(s) pass cuda / nccl / CUDA variables / tf32 ")


def test_config_setting_and_its_near_misses() -> None:
    table = load_tables().unsupported
    config = b'{\n  "bf16": true,\n  "tf32": true,\n  "tf32_note": "true"\n}\n'
    notice = file_notice("train.json", config, ".json", table)
    assert notice is not None and notice.api == "tf32: true (line 3)"
    assert file_notice("train.yaml", b"tf32: false\nbf16: true\n", ".yaml", table) is None
    assert file_notice("train.json", b'{"tf32": false}\n', ".json", table) is None


def test_tf32_beside_cuda_values_keeps_both_tips() -> None:
    table = load_tables().unsupported
    notice = file_notice("run.sh", b"python t.py --tf32 1 --device cuda\n", ".sh", table)
    assert notice is not None
    assert notice.api == "--tf32 1 (line 1), --device cuda (line 1)"
    assert notice.tip == f"{table.launch_config.tip}; {TF32_TIP}"


KERNEL_METADATA = (
    b'{\n  "id": "fastops",\n  "backend": {\n    "type": "cuda",\n    "archs": []\n  }\n}\n'
)


def test_kernel_metadata_is_no_setting_and_its_near_misses() -> None:
    """A kernels-hub metadata.json says what the kernel was built for: no program reads it (no
    row); the same values in a config of another name, or a metadata.json setting a device, are
    rows."""
    table = load_tables().unsupported
    assert file_notice("ops/metadata.json", KERNEL_METADATA, ".json", table) is None
    other = file_notice("ops/settings.json", KERNEL_METADATA, ".json", table)
    assert other is not None and other.api == "type: cuda (line 4)"
    device = file_notice("metadata.json", b'{\n  "device": "cuda"\n}\n', ".json", table)
    assert device is not None and device.api.startswith("device: cuda")
