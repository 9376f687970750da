"""Where a string is an environment key, and how its rewrite is described (rule
environment.ascend_variable, declared here; applied by environment_spans.py)."""

from __future__ import annotations

from ms_fmk_transplt.catalogue.rule_catalog import declare

RULE = declare(
    "environment.ascend_variable",
    'a CUDA environment key with an exact Ascend counterpart: `"CUDA_VISIBLE_DEVICES"` -> '
    '`"ASCEND_RT_VISIBLE_DEVICES"`',
    "Where a CUDA variable whose Ascend counterpart has the same role and values is used as an "
    'environment key (`os.environ["CUDA_VISIBLE_DEVICES"]`, '
    '`os.getenv("PYTORCH_CUDA_ALLOC_CONF")`, `"PYTORCH_CUDA_ALLOC_CONF" in os.environ`, '
    '`env={"CUDA_VISIBLE_DEVICES": ...}`), the key becomes the Ascend name '
    "(`ASCEND_RT_VISIBLE_DEVICES`, `PYTORCH_NPU_ALLOC_CONF`; the list is the `environment` part of "
    "rules/advice.json). Other mentions of the name (messages, docs) are left alone; variables "
    "without an exact counterpart are rows of unsupported.environment. A file whose only "
    "changes are such keys gets no `import torch_npu` (it may set them before torch loads).",
    caveat="the Ascend variable has the same role and values; check the values your launch "
    "scripts set (see the change's message)",
)
KEY_CALLS = frozenset(
    {
        "os.getenv",
        "os.putenv",
        "os.unsetenv",
        "os.environ.get",
        "os.environ.setdefault",
        "os.environ.pop",
    }
)
ENVIRON = "os.environ"


def message(cuda: str, ascend: str, caveat: str) -> str:
    text = f"environment variable '{cuda}' -> '{ascend}'"
    return f"{text} ({caveat})" if caveat else text
