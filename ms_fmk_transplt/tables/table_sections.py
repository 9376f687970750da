"""Typed views of the sections of rules/interface_table.json: each concern of the engine reads
its own section as one of these (``tables.amp.calls``), never through raw dictionaries."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def _leaves(names: frozenset[str]) -> frozenset[str]:
    """The last parts of dotted names (cheap pre-checks before resolving a call's name)."""
    return frozenset(n.rsplit(".", 1)[-1] for n in names)


@dataclass(frozen=True)
class ImportsTable:
    torch_npu_statement: str
    # top-level modules that make a file PyTorch code: torch and libraries built on it
    torch_libraries: frozenset[str] = frozenset()
    standard_library: frozenset[str] = frozenset()  # the standard library's top-level modules


@dataclass(frozen=True)
class TensorMethodsTable:
    calls: Mapping[str, str]  # x.cuda() -> x.npu()
    attributes: Mapping[str, str]  # x.is_cuda -> x.is_npu


@dataclass(frozen=True)
class DeviceStringsTable:
    old: str  # "cuda"
    new: str  # "npu"
    literal: re.Pattern[str]  # a literal whose whole value is a device spec


@dataclass(frozen=True)
class IntDeviceTable:
    identifiers: frozenset[str]  # names taken to be device indices (local_rank, ...)
    sequences: frozenset[str]  # device_ids[...]
    calls: frozenset[str]  # int(...), dist.get_rank()
    device_calls: frozenset[str]  # torch.device
    device_keywords: frozenset[str]  # device=
    call_device_keywords: Mapping[str, frozenset[str]]  # FSDP(device_id=)
    device_leaves: frozenset[str] = field(init=False)
    call_leaves: frozenset[str] = field(init=False)
    call_keywords: frozenset[str] = field(init=False)  # device_id (of some calls only)

    def __post_init__(self) -> None:
        object.__setattr__(self, "device_leaves", _leaves(self.device_calls))
        object.__setattr__(self, "call_leaves", _leaves(self.calls))
        keywords = frozenset().union(*self.call_device_keywords.values())
        object.__setattr__(self, "call_keywords", keywords)


@dataclass(frozen=True)
class AmpTable:
    calls: frozenset[str]  # entry points whose device-type literal the rule claims
    keywords: frozenset[str]
    leaves: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "leaves", _leaves(self.calls))


@dataclass(frozen=True)
class DistributedTable:
    backends: Mapping[str, str]  # "nccl" -> "hccl"
    pairs: Mapping[str, str]  # "cuda:nccl" -> "npu:hccl"
    enums: Mapping[str, str]  # torch.distributed.Backend.NCCL -> HCCL
    renames: Mapping[str, str]  # torch.distributed.is_nccl_available -> is_hccl_available
    enum_leaves: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        names = frozenset(self.enums) | frozenset(self.renames)
        object.__setattr__(self, "enum_leaves", _leaves(names))


@dataclass(frozen=True)
class ProfilerTable:
    calls: frozenset[str]
    old_keyword: str  # use_cuda
    new_keyword: str  # use_device
    value: str  # "npu"


@dataclass(frozen=True)
class SpecifyDeviceTable:
    env: str  # DEVICE_ID
    default: str
    helper: str  # MSFT_NPU_DEVICE
    rank_names: frozenset[str]
    rank_env: frozenset[str]


@dataclass(frozen=True)
class DistributedModeTable:
    dataloaders: frozenset[str]
    data_parallel: frozenset[str]
    set_device: frozenset[str]
    ddp_forwards: frozenset[str]
    helper: str  # the helper functions inserted into MAIN
    init_call: str
    sampler: str
    ddp: str
    wrap_after_methods: frozenset[str]  # in-place initialisation / loading: the wrap goes after
    wrap_after_words: frozenset[str]
    print_calls: frozenset[str]  # print(model) is not a use of the model; per-step prints
    optimizer_prefixes: frozenset[str]
    not_optimizer_prefixes: frozenset[str]
    existing_setup: frozenset[str]  # MAIN already distributed: only migrated
    rank_zero_saves: frozenset[str]
    rank_zero_save_methods: frozenset[str]
    rank_zero_writers: frozenset[str]
    rank_zero_file_modules: frozenset[str]
    rank_zero_helper: str
    rank_zero_check: str
    rank_zero_loads: frozenset[str]  # a load of what rank 0 saved waits for it (a barrier)
    rank_zero_barrier: str


def sections(raw: dict[str, Any]) -> dict[str, Any]:
    """The typed views of every section, by the name ``Tables`` gives them."""
    tm, ds, idv = raw["tensor_methods"], raw["device_strings"], raw["int_device"]
    amp, dist, prof, sd = raw["amp"], raw["distributed"], raw["profiler"], raw["specify_device"]
    dm: dict[str, Any] = {
        k: frozenset(v) if isinstance(v, list) else v
        for k, v in raw["distributed_mode"].items()
        if k[0] != "$"
    }
    return {
        "imports": ImportsTable(
            raw["imports"]["torch_npu_statement"],
            frozenset(raw["imports"]["torch_libraries"]),
            frozenset(raw["imports"]["standard_library"]),
        ),
        "tensor_methods": TensorMethodsTable(
            dict(tm["call"]),
            dict(tm["attribute"]),
        ),
        "device_strings": DeviceStringsTable(
            ds["from"],
            ds["to"],
            re.compile(ds["literal_pattern"]),
        ),
        "int_device": IntDeviceTable(
            frozenset(idv["identifiers"]),
            frozenset(idv["sequences"]),
            frozenset(idv["calls"]),
            frozenset(idv["device_calls"]),
            frozenset(idv["device_keywords"]),
            {call: frozenset(kws) for call, kws in idv["call_device_keywords"].items()},
        ),
        "amp": AmpTable(
            frozenset(amp["device_type_calls"]),
            frozenset(amp["device_type_keywords"]),
        ),
        "distributed": DistributedTable(
            dist["backend_literals"],
            dist["compound_pairs"],
            dist["enum_attributes"],
            dist.get("function_renames", {}),
        ),
        "profiler": ProfilerTable(
            frozenset(prof["calls"]),
            prof["cuda_keyword"],
            prof["npu_keyword"],
            prof["npu_value"],
        ),
        "specify_device": SpecifyDeviceTable(
            sd["env"],
            sd["default"],
            sd["helper"],
            frozenset(sd["rank_names"]),
            frozenset(sd["rank_env"]),
        ),
        "distributed_mode": DistributedModeTable(**dm),
    }
