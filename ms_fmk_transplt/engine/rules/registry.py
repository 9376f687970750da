"""The rule families, in order: one entry per family, the prefix of its rule ids.

A family lives in ``engine/rules/<name>/``: its rule ids are declared there (``declare(...)`` in
its modules), its code is there, and ``data`` points to the tables it reads in ``rules/``. The
same name prefixes its golden fixtures (``fixtures/rules/<name>.<rule>/``) and its pages
(``docs/rules/<name>.<rule>.md``). ARCHITECTURE.md walks through adding one;
tests/test_architecture.py checks that every id is where this registry says.

Where each family acts on a file (``stage``):

* ``gate``: before any pass (opt-out comments, size and depth limits, files Python cannot read);
* ``before``: the LibCST stage of ``-r``, on the file as written (engine/stages.py);
* ``span``: the span pass (engine/spans/), the one implementation of the built-in rules: its
  ``concerns`` act on each node in the order of this tuple;
* ``after``: the LibCST stages of ``-sim`` and ``distributed -m``, over the span pass's output;
* ``scan``: what the target version says of the code (engine/target_scan.py);
* ``run``: the run itself (a file the engine failed on, a statement it left as written).
"""

from __future__ import annotations

from dataclasses import dataclass

from ms_fmk_transplt.engine.rules.amp.amp_spans import AmpSpans
from ms_fmk_transplt.engine.rules.cuda_only.cuda_only_spans import CudaOnlySpans
from ms_fmk_transplt.engine.rules.cuda_only.dispatch_key_spans import DispatchKeySpans
from ms_fmk_transplt.engine.rules.cuda_only.skip_guards_spans import SkipGuardSpans
from ms_fmk_transplt.engine.rules.device_api.capability_spans import CapabilitySpans
from ms_fmk_transplt.engine.rules.device_api.device_api_spans import DeviceApiSpans, Hf32Switches
from ms_fmk_transplt.engine.rules.device_strings.device_strings_spans import DeviceStringsSpans
from ms_fmk_transplt.engine.rules.distributed.distributed_spans import DistributedSpans
from ms_fmk_transplt.engine.rules.environment.environment_spans import EnvironmentSpans
from ms_fmk_transplt.engine.rules.expected_errors.expected_errors_spans import (
    ExpectedErrorsSpans,
)
from ms_fmk_transplt.engine.rules.imports.imports_spans import ImportsSpans
from ms_fmk_transplt.engine.rules.libraries.library_argument_spans import LibraryArgumentSpans
from ms_fmk_transplt.engine.rules.profiler.profiler_spans import ProfilerSpans
from ms_fmk_transplt.engine.rules.specify_device.specify_device_spans import SpecifyDeviceSpans
from ms_fmk_transplt.engine.rules.tensor_methods.tensor_methods_spans import TensorMethodsSpans
from ms_fmk_transplt.engine.rules.tf.adapter_options import TfOptionSpans
from ms_fmk_transplt.engine.rules.tf.estimator_spans import TfEstimatorSpans
from ms_fmk_transplt.engine.rules.tf.npu_ops_spans import TfNpuOpsSpans
from ms_fmk_transplt.engine.rules.tf.session_spans import TfSessionSpans
from ms_fmk_transplt.engine.rules.tf.tf_api_rows import TfApiRows
from ms_fmk_transplt.engine.rules.tf.tf_distributed_spans import TfDistributedSpans
from ms_fmk_transplt.engine.rules.unsupported.unsupported_spans import UnsupportedSpans
from ms_fmk_transplt.engine.spans.span_concern import SpanConcern

_INTERFACE = "rules/interface_table.json"
_UNSUPPORTED = "rules/unsupported_api.json"
_ADVICE = "rules/advice.json"
_SIMILAR = "rules/similar_api.json"
_LIBRARIES = "rules/libraries.json"
_USER_RULES = "rules/user_rules.schema.json"
_TF_MIGRATION = "rules/tf_migration.json"
_TF_ADAPTER = "rules/tf_adapter.json"


@dataclass(frozen=True)
class Family:
    name: str  # the id prefix; the folder engine/rules/<name>/
    stage: str  # gate, before, span, after, scan or run (see above)
    modules: tuple[str, ...]  # its modules in engine/rules/<name>/, declaring modules first
    data: tuple[str, ...] = ()  # what it reads: rules/<file>[#<top-level key>]
    concerns: tuple[type[SpanConcern], ...] = ()  # span stage: its concerns, in order
    option: str = ""  # the option that turns it on ("": always on)
    framework: str = "pytorch"  # "tensorflow": its concerns run on TensorFlow files only


FAMILIES: tuple[Family, ...] = (
    Family("parse", "gate", ("guards", "parse_errors"), (_UNSUPPORTED,)),
    Family("optout", "gate", ("optout_comments",)),
    Family("user_rules", "before", ("user_rule_rewrites",), (_USER_RULES,), option="-r"),
    Family("amp", "span", ("amp_spans",), (f"{_INTERFACE}#amp",), (AmpSpans,)),
    Family(
        "cuda_only",
        "span",
        (
            "cuda_only_spans",
            "dispatch_key_spans",
            "skip_guards_spans",
            "cuda_only_code",
            "cuda_only_hints",
            "cuda_predicates",
            "project_facts",
            "cuda_gates",
        ),
        (_UNSUPPORTED, _LIBRARIES),
        (CudaOnlySpans, DispatchKeySpans, SkipGuardSpans),
    ),
    Family(
        "device_api",
        "span",
        ("device_api_spans", "capability_spans", "no_counterpart", "probe_shapes", "cuda_chains"),
        (
            f"{_INTERFACE}#cuda_namespace",
            "rules/torch_npu_names",
            _UNSUPPORTED,
            f"{_ADVICE}#entries",
        ),
        (CapabilitySpans, DeviceApiSpans, Hf32Switches),
    ),
    Family(
        "specify_device",
        "span",
        ("specify_device_spans", "rank_reads"),
        (f"{_INTERFACE}#specify_device",),
        (SpecifyDeviceSpans,),
        option="-s",
    ),
    Family(
        "tensor_methods",
        "span",
        ("tensor_methods_spans",),
        (f"{_INTERFACE}#tensor_methods",),
        (TensorMethodsSpans,),
    ),
    Family(
        "device_strings",
        "span",
        (
            "device_strings_spans",
            "command_overrides",
            "device_names",
            "device_parameters",
            "dotted_names",
            "device_labels",
            "device_consumers",
        ),
        (
            f"{_INTERFACE}#device_strings",
            f"{_INTERFACE}#int_device",
            f"{_INTERFACE}#foreign_cuda_roots",
            _UNSUPPORTED,
            "rules/device_consumers.json",
        ),
        (DeviceStringsSpans,),
    ),
    Family("expected_errors", "span", ("expected_errors_spans",), (), (ExpectedErrorsSpans,)),
    Family(
        "distributed",
        "span",
        ("distributed_spans", "backends"),
        (f"{_INTERFACE}#distributed",),
        (DistributedSpans,),
    ),
    Family("profiler", "span", ("profiler_spans",), (f"{_INTERFACE}#profiler",), (ProfilerSpans,)),
    Family(
        "environment",
        "span",
        ("environment_keys", "environment_spans"),
        (f"{_ADVICE}#environment",),
        (EnvironmentSpans,),
    ),
    Family(
        "unsupported",
        "span",
        ("unsupported_rows", "unsupported_spans", "launch_values"),
        (_UNSUPPORTED, _LIBRARIES),
        (UnsupportedSpans,),
    ),
    Family(
        "libraries",
        "span",
        ("library_rows", "library_argument_spans"),
        (_LIBRARIES,),
        (LibraryArgumentSpans,),
    ),
    Family(
        "tf",
        "span",
        (
            "estimator_spans",
            "session_spans",
            "tf_distributed_spans",
            "npu_ops_spans",
            "adapter_options",
            "tf_api_rows",
            "adapter_import",
            "tf_files",
            "tf_edits",
            "tf_versions",
            "horovod_values",
        ),
        (_TF_MIGRATION, _TF_ADAPTER),
        (
            TfEstimatorSpans,
            TfSessionSpans,
            TfDistributedSpans,
            TfNpuOpsSpans,
            TfOptionSpans,
            TfApiRows,
        ),
        framework="tensorflow",
    ),
    Family(
        "imports",
        "span",
        ("imports_spans", "torch_npu_spans"),
        (f"{_INTERFACE}#imports", f"{_INTERFACE}#cuda_namespace"),
        (ImportsSpans,),
    ),
    Family("similar", "after", ("similar_calls",), (f"{_SIMILAR}#entries",), option="-sim"),
    Family(
        "distributed_mode",
        "after",
        (
            "distributed_plan",
            "distributed_rewrites",
            "dataloader_sharding",
            "model_wraps",
            "trained_modules",
            "existing_distributed",
            "rank_zero_guards",
        ),
        (f"{_INTERFACE}#distributed_mode",),
        option="distributed -m",
    ),
    Family("kit", "after", ("kit_edits", "kit_checks", "training_loop"), option="kit"),
    Family("todo", "after", ("todo_comments",)),
    Family("advice", "scan", ("advice_rows", "same_item"), (f"{_ADVICE}#entries",)),
    Family("operator_support", "scan", ("operator_rows",), ("rules/operator_support",)),
    Family("engine", "run", ("engine_errors", "unmodelled"), (_UNSUPPORTED,)),
)


BY_NAME = {family.name: family for family in FAMILIES}


def family_of(module: str) -> str:
    """The family of a module of engine/rules/<family>/ (by its dotted name)."""
    return module.split(".")[3]


def span_concerns(
    specify_device: bool, tensorflow: bool = False, pytorch: bool = True
) -> tuple[type[SpanConcern], ...]:
    """The span pass's concerns, in order (-s's only with it; the tensorflow families' only
    for a file that imports TensorFlow, the pytorch ones not for a file that imports TensorFlow
    and no torch: its ``"nccl"`` or ``CUDA_VISIBLE_DEVICES`` are TensorFlow's)."""
    return tuple(
        concern
        for family in FAMILIES
        if family.stage == "span"
        and (family.option != "-s" or specify_device)
        and (tensorflow if family.framework == "tensorflow" else pytorch)
        for concern in family.concerns
    )


def family_modules() -> list[str]:
    """Every module of every family (importing them declares every rule id)."""
    return [
        f"ms_fmk_transplt.engine.rules.{family.name}.{module}"
        for family in FAMILIES
        for module in family.modules
    ]
