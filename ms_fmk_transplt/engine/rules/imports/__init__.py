"""imports.*: `import torch_npu` once per changed file, and imports from torch.cuda."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.family_spec import INTERFACE, Family
from ms_fmk_transplt.engine.rules.imports.imports_spans import ImportsSpans
from ms_fmk_transplt.engine.rules.imports.torch_npu_spans import finish

FAMILY = Family(
    "imports",
    "span",
    ("imports_spans", "torch_npu_spans"),
    (f"{INTERFACE}#imports", f"{INTERFACE}#cuda_namespace"),
    (ImportsSpans,),
    finish=finish,
)
