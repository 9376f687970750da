"""What the core's own machinery uses of particular families, named once (the registry's
second door; the first, registry.py, calls the hooks every family may have).

The gates before any pass (opt-out comments, size guards, files Python cannot read), the rows of
a file the engine failed on, the open-work row of an API the tables list, the facts whole-program
analysis reads (CUDA-only code across modules, TensorFlow versions and Horovod passed as a value),
the kits' and ``distributed -m``'s checks of the -m file, and the target version's scan: each is
a family's logic and ids, and the core reaches them only through these names.

Each name is imported from its family when first asked for (``from family_exports import
NAME`` imports NAME's module, not every family's): a one-file ``--check`` of a PyTorch file
loads no TensorFlow family code, a kit's check no advice code (tests/test_startup_imports.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.rules.advice.advice_rows import (
        PATTERN_WORDS,
        AdviceFinder,
        may_hold_pattern,
    )
    from ms_fmk_transplt.engine.rules.advice.same_item import joined_advice
    from ms_fmk_transplt.engine.rules.advice.training_scripts import (
        is_test,
        runs_training,
        tpu_script,
        training_script,
        trains,
        trains_at_module_level,
    )
    from ms_fmk_transplt.engine.rules.cuda_only.cuda_only_code import (
        cuda_conditions,
        cuda_only_names,
    )
    from ms_fmk_transplt.engine.rules.cuda_only.cuda_only_hints import has_condition, hinted
    from ms_fmk_transplt.engine.rules.engine.engine_errors import INTERNAL_ERROR
    from ms_fmk_transplt.engine.rules.engine.unmodelled import left_as_written
    from ms_fmk_transplt.engine.rules.imports.torch_npu_spans import TORCH_NPU, insert_torch_npu
    from ms_fmk_transplt.engine.rules.kit.kit_checks import (
        NO_LOOP,
        PRECONDITION,
        TENSORFLOW,
        holds_training_loop,
        is_kit_call,
        project_notices,
    )
    from ms_fmk_transplt.engine.rules.libraries.library_configs import config_notice
    from ms_fmk_transplt.engine.rules.operator_support.operator_rows import operator_notice
    from ms_fmk_transplt.engine.rules.optout.optout_comments import (
        IGNORE_LINE,
        SKIP,
        ignored_lines,
        skip_file_line,
    )
    from ms_fmk_transplt.engine.rules.parse.guards import LIMIT, bidi_notices, refusal, too_large
    from ms_fmk_transplt.engine.rules.parse.parse_errors import (
        DECODE_ERROR,
        SYNTAX_ERROR,
        parse,
        refused_by_cpython,
        undecodable,
    )
    from ms_fmk_transplt.engine.rules.tf.adapter_import import tf_statements
    from ms_fmk_transplt.engine.rules.tf.estimator_spans import applied_npu_options
    from ms_fmk_transplt.engine.rules.tf.horovod_values import (
        Pass,
        horovod_passes,
        module_functions,
        receiving_parameter,
    )
    from ms_fmk_transplt.engine.rules.tf.session_npu_options import SESSION_LOOP
    from ms_fmk_transplt.engine.rules.tf.tf_edits import CATEGORY as TF_CATEGORY
    from ms_fmk_transplt.engine.rules.tf.tf_versions import KINDS, Evidence, api_evidence, bindings
    from ms_fmk_transplt.engine.rules.unsupported.launch_values import (
        LAUNCH_SUFFIXES,
        MAX_BYTES,
        file_notice,
    )
    from ms_fmk_transplt.engine.rules.unsupported.unsupported_rows import category_rule

_PACKAGE = "ms_fmk_transplt.engine.rules"
# each name -> (its family, its module in engine/rules/<family>/, its name there)
_WHERE = {
    "PATTERN_WORDS": ("advice", "advice_rows", "PATTERN_WORDS"),
    "AdviceFinder": ("advice", "advice_rows", "AdviceFinder"),
    "may_hold_pattern": ("advice", "advice_rows", "may_hold_pattern"),
    "joined_advice": ("advice", "same_item", "joined_advice"),
    "is_test": ("advice", "training_scripts", "is_test"),
    "runs_training": ("advice", "training_scripts", "runs_training"),
    "tpu_script": ("advice", "training_scripts", "tpu_script"),
    "training_script": ("advice", "training_scripts", "training_script"),
    "trains": ("advice", "training_scripts", "trains"),
    "trains_at_module_level": ("advice", "training_scripts", "trains_at_module_level"),
    "cuda_conditions": ("cuda_only", "cuda_only_code", "cuda_conditions"),
    "cuda_only_names": ("cuda_only", "cuda_only_code", "cuda_only_names"),
    "has_condition": ("cuda_only", "cuda_only_hints", "has_condition"),
    "hinted": ("cuda_only", "cuda_only_hints", "hinted"),
    "INTERNAL_ERROR": ("engine", "engine_errors", "INTERNAL_ERROR"),
    "left_as_written": ("engine", "unmodelled", "left_as_written"),
    "TORCH_NPU": ("imports", "torch_npu_spans", "TORCH_NPU"),
    "insert_torch_npu": ("imports", "torch_npu_spans", "insert_torch_npu"),
    "NO_LOOP": ("kit", "kit_checks", "NO_LOOP"),
    "PRECONDITION": ("kit", "kit_checks", "PRECONDITION"),
    "TENSORFLOW": ("kit", "kit_checks", "TENSORFLOW"),
    "holds_training_loop": ("kit", "kit_checks", "holds_training_loop"),
    "is_kit_call": ("kit", "kit_checks", "is_kit_call"),
    "project_notices": ("kit", "kit_checks", "project_notices"),
    "config_notice": ("libraries", "library_configs", "config_notice"),
    "operator_notice": ("operator_support", "operator_rows", "operator_notice"),
    "IGNORE_LINE": ("optout", "optout_comments", "IGNORE_LINE"),
    "SKIP": ("optout", "optout_comments", "SKIP"),
    "ignored_lines": ("optout", "optout_comments", "ignored_lines"),
    "skip_file_line": ("optout", "optout_comments", "skip_file_line"),
    "LIMIT": ("parse", "guards", "LIMIT"),
    "bidi_notices": ("parse", "guards", "bidi_notices"),
    "refusal": ("parse", "guards", "refusal"),
    "too_large": ("parse", "guards", "too_large"),
    "DECODE_ERROR": ("parse", "parse_errors", "DECODE_ERROR"),
    "SYNTAX_ERROR": ("parse", "parse_errors", "SYNTAX_ERROR"),
    "parse": ("parse", "parse_errors", "parse"),
    "refused_by_cpython": ("parse", "parse_errors", "refused_by_cpython"),
    "undecodable": ("parse", "parse_errors", "undecodable"),
    "tf_statements": ("tf", "adapter_import", "tf_statements"),
    "applied_npu_options": ("tf", "estimator_spans", "applied_npu_options"),
    "Pass": ("tf", "horovod_values", "Pass"),
    "horovod_passes": ("tf", "horovod_values", "horovod_passes"),
    "module_functions": ("tf", "horovod_values", "module_functions"),
    "receiving_parameter": ("tf", "horovod_values", "receiving_parameter"),
    "SESSION_LOOP": ("tf", "session_npu_options", "SESSION_LOOP"),
    "TF_CATEGORY": ("tf", "tf_edits", "CATEGORY"),
    "KINDS": ("tf", "tf_versions", "KINDS"),
    "Evidence": ("tf", "tf_versions", "Evidence"),
    "api_evidence": ("tf", "tf_versions", "api_evidence"),
    "bindings": ("tf", "tf_versions", "bindings"),
    "LAUNCH_SUFFIXES": ("unsupported", "launch_values", "LAUNCH_SUFFIXES"),
    "MAX_BYTES": ("unsupported", "launch_values", "MAX_BYTES"),
    "file_notice": ("unsupported", "launch_values", "file_notice"),
    "category_rule": ("unsupported", "unsupported_rows", "category_rule"),
}

__all__ = [
    "cuda_conditions",
    "is_test",
    "runs_training",
    "tpu_script",
    "training_script",
    "trains",
    "trains_at_module_level",
    "applied_npu_options",
    "SESSION_LOOP",
    "already_distributed_rule",
    "no_dataloader_rule",
    "DECODE_ERROR",
    "IGNORE_LINE",
    "INTERNAL_ERROR",
    "KINDS",
    "LAUNCH_SUFFIXES",
    "LIMIT",
    "MAX_BYTES",
    "NO_LOOP",
    "PATTERN_WORDS",
    "PRECONDITION",
    "SKIP",
    "SYNTAX_ERROR",
    "TENSORFLOW",
    "TF_CATEGORY",
    "TORCH_NPU",
    "AdviceFinder",
    "Evidence",
    "Pass",
    "api_evidence",
    "bidi_notices",
    "bindings",
    "category_rule",
    "config_notice",
    "cuda_only_names",
    "file_notice",
    "has_condition",
    "hinted",
    "holds_training_loop",
    "is_kit_call",
    "project_notices",
    "horovod_passes",
    "ignored_lines",
    "insert_torch_npu",
    "joined_advice",
    "left_as_written",
    "may_hold_pattern",
    "module_functions",
    "operator_notice",
    "parse",
    "receiving_parameter",
    "refusal",
    "refused_by_cpython",
    "skip_file_line",
    "tf_statements",
    "too_large",
    "undecodable",
]


def __getattr__(name: str) -> object:
    """A name of _WHERE, imported from its family's module on first use (PEP 562)."""
    try:
        family, module, attr = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{_PACKAGE}.{family}.{module}"), attr)
    globals()[name] = value
    return value


def already_distributed_rule() -> str:
    """``distributed -m``'s row for a script that is already distributed (its family is a
    LibCST stage: imported only when asked)."""
    from ms_fmk_transplt.engine.rules.distributed_mode.existing_distributed import (
        ALREADY_DISTRIBUTED,
    )

    return ALREADY_DISTRIBUTED


def no_dataloader_rule() -> str:
    """``distributed -m``'s row for a script whose data loader it could not find."""
    from ms_fmk_transplt.engine.rules.distributed_mode.distributed_plan import NO_DATALOADER

    return NO_DATALOADER
