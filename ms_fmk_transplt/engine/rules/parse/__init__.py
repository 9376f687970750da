"""parse.*: files the engine cannot or will not read (decode errors, syntax CPython refuses,
size and depth limits, bidirectional control characters)."""
