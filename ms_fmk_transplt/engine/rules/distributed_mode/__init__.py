"""distributed_mode.*: `distributed -m MAIN -t MODEL`, a single-card script made data-parallel
(a LibCST stage after the span pass)."""
