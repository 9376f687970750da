"""Shapes of collective-backend strings, shared by both passes (rules distributed.*)."""

from __future__ import annotations

import re

COMPOUND = re.compile(r"^\s*\w+:\w+\s*(,\s*\w+:\w+\s*)*$")  # "cpu:gloo,cuda:nccl"
