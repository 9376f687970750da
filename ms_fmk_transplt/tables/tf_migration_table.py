"""What the TensorFlow migration maps to what (``rules/tf_migration.json``): the adapter's names
for Estimator, session and Horovod APIs, the GPU-only settings it reports, the words that anchor
a TensorFlow file's statements. The options of the adapter are ``rules/tf_adapter.json``
(tables/tf_adapter_table.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_V1 = ("tensorflow.compat.v1.", "tensorflow.compat.v2.", "tensorflow._api.v2.")


def tf_name(qualified: str | None) -> str:
    """A TensorFlow qualified name with ``compat.v1`` / ``compat.v2`` taken out
    (``tensorflow.compat.v1.Session`` -> ``tensorflow.Session``); "" for None."""
    if not qualified:
        return ""
    for prefix in _V1:
        if qualified.startswith(prefix):
            return "tensorflow." + qualified[len(prefix) :]
    if qualified.startswith("tensorflow_estimator.estimator."):  # the estimator package itself
        return "tensorflow.estimator." + qualified[len("tensorflow_estimator.estimator.") :]
    if qualified.startswith("tf_keras."):
        return "tensorflow.keras." + qualified[len("tf_keras.") :]
    return qualified


@dataclass(frozen=True)
class Setting:
    """A GPU-only setting: the row's action (manual / caveat), its tip, and the literal text an
    argument must hold for the row (``GPU`` of ``list_physical_devices("GPU")``; "": any)."""

    action: str
    tip: str
    argument: str | bool = ""


@dataclass(frozen=True, eq=False)
class TfMigrationTable:
    raw: dict[str, Any]
    import_roots: frozenset[str]
    horovod_modules: dict[str, str]
    tf1_markers: tuple[bytes, ...]
    tf1_runtime_markers: tuple[bytes, ...]
    tf2_markers: tuple[bytes, ...]  # TF 2.x compute (a file with none opens no NPU device)
    renames: dict[str, str]
    canned: frozenset[str]
    config_proto: frozenset[str]
    sessions: dict[str, int]
    horovod: dict[str, dict[str, str]]
    horovod_manual: dict[str, str]
    strategies: dict[str, str]
    npu_ops: dict[str, dict[str, Any]]
    loss_scale: dict[str, str]
    gpu_settings: dict[str, Setting]
    gpu_attributes: dict[str, Setting]
    gpu_keywords: dict[str, Setting]
    custom_kernels: dict[str, str]
    anchor_words: tuple[str, ...]
    # names below ``tensorflow.`` (a trailing "." a namespace) only TF 1.x has at its top level,
    # that run graph code, and that only TF 2.x has: what a program calls decides its version
    tf_versions: dict[str, tuple[str, ...]]
    tf2_compat_import: tuple[str, ...]  # the TF 2.x adapter's lines for compat.v1 graph code

    def text(self, key: str) -> str:
        value = self.raw[key]
        assert isinstance(value, str)
        return value


def _settings(raw: dict[str, list[Any]]) -> dict[str, Setting]:
    out = {}
    for name, entry in raw.items():
        if entry[0] not in ("manual", "caveat") or not isinstance(entry[1], str):
            raise ValueError(f"rules/tf_migration.json: {name}: [action, tip(, argument)]")
        out[name] = Setting(entry[0], entry[1], entry[2] if len(entry) > 2 else "")
    return out


def load_tf_migration(raw: dict[str, Any]) -> TfMigrationTable:
    return TfMigrationTable(
        raw=raw,
        import_roots=frozenset(raw["tf_import_roots"]),
        horovod_modules=dict(raw["horovod_modules"]),
        tf1_markers=tuple(m.encode() for m in raw["tf1_markers"]),
        tf1_runtime_markers=tuple(m.encode() for m in raw["tf1_runtime_markers"]),
        tf2_markers=tuple(m.encode() for m in raw["tf2_markers"]),
        renames=dict(raw["renames"]),
        canned=frozenset(raw["canned_estimators"]),
        config_proto=frozenset(raw["config_proto"]),
        sessions={k: int(v) for k, v in raw["sessions"].items()},
        horovod={k: dict(v) for k, v in raw["horovod"].items()},
        horovod_manual=dict(raw["horovod_manual"]),
        strategies=dict(raw["strategies"]),
        npu_ops={k: dict(v) for k, v in raw["npu_ops"].items()},
        loss_scale=dict(raw["loss_scale"]),
        gpu_settings=_settings(raw["gpu_settings"]),
        gpu_attributes=_settings(raw["gpu_attributes"]),
        gpu_keywords=_settings(raw["gpu_keywords"]),
        custom_kernels=dict(raw["custom_kernels"]),
        anchor_words=tuple(raw["anchor_words"]),
        tf_versions={k: tuple(v) for k, v in raw["tf_versions"].items()},
        tf2_compat_import=tuple(raw["tf2_compat_import"]),
    )
