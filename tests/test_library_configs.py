"""Training recipes that name a CUDA-only library part (rule libraries.cuda_only, config files):
torchtune's ``_component_: bitsandbytes.optim.PagedAdamW8bit``, transformers' optimizer names
in LLaMA-Factory's / axolotl's YAML; one row per file listing the lines, near misses silent."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.libraries.library_configs import config_notice
from ms_fmk_transplt.tables import load_tables

TORCHTUNE = b"""optimizer:
  _component_: bitsandbytes.optim.PagedAdamW8bit
  lr: 2e-5
optimizer_in_bwd: True
loss:
  _component_: torchtune.modules.loss.LinearCrossEntropyLoss
"""

RECIPES = b"""### train
optim: paged_adamw_8bit  # bitsandbytes
optimizer: adamw_bnb_8bit
"""


def test_a_torchtune_component_of_bitsandbytes_is_one_manual_row() -> None:
    notice = config_notice("8B_full.yaml", TORCHTUNE, ".yaml", load_tables().unsupported)
    assert notice is not None
    assert (notice.line, notice.end_line, notice.rule) == (2, 2, "libraries.cuda_only")
    assert (notice.api, notice.category, notice.action) == (
        "bitsandbytes.optim.PagedAdamW8bit",
        "third_party",
        "manual",
    )
    assert "no bitsandbytes build has an NPU optimizer kernel" in notice.tip
    assert notice.message.startswith("1 setting(s) name a CUDA-only library part: _component_")


def test_optimizer_names_of_transformers_recipes_are_one_row_listing_the_lines() -> None:
    notice = config_notice("sft.yaml", RECIPES, ".yaml", load_tables().unsupported)
    assert notice is not None
    assert (notice.line, notice.end_line) == (2, 3)
    assert notice.api == "transformers: optim='paged_adamw_8bit'"
    assert "(line 2), optimizer: adamw_bnb_8bit (line 3)" in notice.message
    assert notice.tip.count("bitsandbytes'") == 1  # each tip once


def test_near_misses_are_silent() -> None:
    table = load_tables().unsupported
    near = (
        b"optim: adamw_torch\n"
        b"optimizer: adamw_torch_fused\n"
        b"_component_: torch.optim.AdamW\n"
        b"# optim: paged_adamw_8bit (a comment)\n"
        b"description: uses bitsandbytes.optim.PagedAdamW8bit elsewhere\n"
        b"_component_: transformers.Trainer\n"  # runs on the NPU: no config row
    )
    assert config_notice("near.yaml", near, ".yaml", table) is None
    assert config_notice("run.sh", b"--optim paged_adamw_8bit\n", ".sh", table) is None
    json_recipe = b'{\n  "optim": "paged_adamw_32bit",\n  "bf16": true\n}\n'
    found = config_notice("ds.json", json_recipe, ".json", table)
    assert found is not None and found.line == 2


def test_an_attention_kernel_from_the_hub_in_a_recipe_is_a_row() -> None:
    """axolotl's gpt-oss recipes: ``attn_implementation: kernels-community/vllm-flash-attn3``;
    flash_attention_3 too; sdpa, eager and flash_attention_2 (an NPU path) are no row."""
    table = load_tables().unsupported
    recipe = b"attn_implementation: kernels-community/vllm-flash-attn3\nbf16: true\n"
    notice = config_notice("gpt-oss.yaml", recipe, ".yaml", table)
    assert notice is not None and (notice.line, notice.action) == (1, "manual")
    assert notice.api == "transformers: attn_implementation='kernels-community/vllm-flash-attn3'"
    assert "Hugging Face Hub" in notice.tip
    fa3 = config_notice("fa3.yaml", b'attn_implementation: "flash_attention_3"\n', ".yaml", table)
    assert fa3 is not None and "FlashAttention 3" in fa3.tip
    for value in (b"sdpa", b"eager", b"flash_attention_2", b"flex_attention"):
        near = b"attn_implementation: " + value + b"\n"
        assert config_notice("near.yaml", near, ".yaml", table) is None


def test_a_json_file_names_a_kernel_only_at_its_top_level() -> None:
    """An HF arguments JSON names the setting at its top level; a test's recorded reference
    nesting the run's arguments (trl's tests/invariant/references/sft_fa2.json) is no recipe."""
    table = load_tables().unsupported
    args = b'{\n  "attn_implementation": "kernels-community/flash-attn2",\n  "bf16": true\n}\n'
    found = config_notice("args.json", args, ".json", table)
    assert found is not None and found.line == 2
    reference = (
        b'{\n  "config": {\n    "args": {\n'
        b'      "attn_implementation": "kernels-community/flash-attn2"\n    }\n  },\n'
        b'  "trajectory": [1.5, 1.2]\n}\n'
    )
    assert config_notice("sft_fa2.json", reference, ".json", table) is None
