"""Cheap byte-level test run before any CST work: files that cannot contain anything the built-in
rules act on are copied without parsing."""

from __future__ import annotations

TRIGGERS = (b"cuda", b"nccl", b"NCCL")


def may_need_migration(source: bytes) -> bool:
    return any(token in source for token in TRIGGERS)
