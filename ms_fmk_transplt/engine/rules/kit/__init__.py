"""kit.*: `kit aoe|profile|precision -m MAIN`, the AOE-tuning, profiling and precision-comparison
variants of a training script (a LibCST stage after the span pass, on the -m file only)."""
