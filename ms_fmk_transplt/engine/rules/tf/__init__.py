"""tf.*: TensorFlow scripts onto the Ascend TF adapter (npu_bridge / npu_device)."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules.family_spec import TF_ADAPTER, TF_MIGRATION, Family
from ms_fmk_transplt.engine.rules.tf.adapter_import import finish
from ms_fmk_transplt.engine.rules.tf.adapter_options import TfOptionSpans
from ms_fmk_transplt.engine.rules.tf.estimator_spans import TfEstimatorSpans
from ms_fmk_transplt.engine.rules.tf.gpu_only_apis import TfGpuOnlyApis
from ms_fmk_transplt.engine.rules.tf.gpu_probes import TfGpuProbes
from ms_fmk_transplt.engine.rules.tf.npu_ops_spans import TfNpuOpsSpans
from ms_fmk_transplt.engine.rules.tf.session_spans import TfSessionSpans
from ms_fmk_transplt.engine.rules.tf.tf_api_rows import TfApiRows, fold
from ms_fmk_transplt.engine.rules.tf.tf_distributed_spans import TfDistributedSpans
from ms_fmk_transplt.engine.rules.tf.tf_files import anchor_words, read_file_facts
from ms_fmk_transplt.engine.rules.tf.tpu_estimator import TfTpuSpans

FAMILY = Family(
    "tf",
    "span",
    (
        "estimator_spans",
        "run_config_checkpoints",
        "session_spans",
        "session_npu_options",
        "tf_distributed_spans",
        "tf_batches",
        "tf_pipelines",
        "npu_ops_spans",
        "adapter_options",
        "tf_api_rows",
        "gpu_only_apis",
        "adapter_import",
        "tf_files",
        "tf_edits",
        "tf_versions",
        "horovod_values",
        "horovod_shutdown",
        "tpu_estimator",
        "gpu_probes",
    ),
    (TF_MIGRATION, TF_ADAPTER),
    (
        TfEstimatorSpans,
        TfTpuSpans,
        TfSessionSpans,
        TfDistributedSpans,
        TfNpuOpsSpans,
        TfOptionSpans,
        TfApiRows,
        TfGpuProbes,
        TfGpuOnlyApis,
    ),
    framework="tensorflow",
    anchor_words=anchor_words,
    file_facts=read_file_facts,
    finish=finish,
    fold=fold,
)
