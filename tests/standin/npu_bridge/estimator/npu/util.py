"""TEST DOUBLE: the adapter's process-wide values (rank id and size after init_resource)."""

from __future__ import annotations

from typing import Any

_VALUES: dict[str, Any] = {}


def global_dict_init() -> None:
    _VALUES.clear()


def set_value(key: str, value: Any) -> None:
    _VALUES[key] = value


def get_value(key: str, default: Any = None) -> Any:
    return _VALUES.get(key, default)
